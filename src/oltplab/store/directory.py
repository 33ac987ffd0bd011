"""Every name in a results directory, in one place: what a run, an experiment and a merge
write there, and which of it is the run's own state rather than a cell's raw files (a
merge copies raw files only; import and reports leave the scratch out).

    <results>/
      ledger.sqlite, journal.jsonl, run.json, .oltplab.lock, oltplab.log, pt-summary.txt
      search.json                    time an unfinished --precision search has spent
      benchmark_logs*/<engine>/...   raw files of the cells (plan.scenario_dir, cell_stem)
      .work/                         scratch: datadirs, snapshots, prepare output
      report/                        what `oltplab report` writes by default
      capacity.json, bisect.json     what `capacity` and `bisect` found
      steps/, explain/, snapshots/   a bisect's steps, its explanation, their shared snapshots
      canary/<moment>/               a shard's canary runs, each a results directory
      logs/<shard>.log               the shards' logs, after a merge
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oltplab.base.errors import OltplabError
from oltplab.plan import scenario_dir

LEDGER = "ledger.sqlite"
JOURNAL = "journal.jsonl"
RUN_JSON = "run.json"
SEARCH = "search.json"
LOCK = ".oltplab.lock"
LOG = "oltplab.log"
HOST_SUMMARY = "pt-summary.txt"
WORK = ".work"
REPORT = "report"
CAPACITY_JSON = "capacity.json"
BISECT_JSON = "bisect.json"
STEPS = "steps"
EXPLAIN = "explain"
SNAPSHOTS = "snapshots"
CANARY = "canary"
SHARD_LOGS = "logs"

# The run's own state and scratch: never a cell's raw file, so never copied by a merge.
RUN_STATE = frozenset(
    {WORK, LEDGER, JOURNAL, RUN_JSON, SEARCH, LOCK, LOG, REPORT, CANARY, SNAPSHOTS}
)


@dataclass(frozen=True)
class ResultsDir:
    """One results directory and the paths of what oltplab keeps in it."""

    path: Path

    def cells_folder(self, workload: str, network: bool, engine_folder: str) -> Path:
        """Where an engine's raw files of one workload go (each named by plan.cell_stem)."""
        return self.path / scenario_dir(workload, network) / engine_folder

    @property
    def ledger(self) -> Path:
        return self.path / LEDGER

    @property
    def ledger_files(self) -> list[Path]:
        """The ledger and the WAL files SQLite keeps beside it."""
        return [self.path / (LEDGER + suffix) for suffix in ("", "-wal", "-shm")]

    @property
    def journal(self) -> Path:
        return self.path / JOURNAL

    @property
    def run_json(self) -> Path:
        return self.path / RUN_JSON

    @property
    def search(self) -> Path:
        return self.path / SEARCH

    @property
    def lock(self) -> Path:
        return self.path / LOCK

    @property
    def log(self) -> Path:
        return self.path / LOG

    @property
    def host_summary(self) -> Path:
        return self.path / HOST_SUMMARY

    @property
    def work(self) -> Path:
        """The scratch folder when no node-local one is named (store.scratch)."""
        return self.path / WORK

    @property
    def report(self) -> Path:
        return self.path / REPORT

    @property
    def capacity_json(self) -> Path:
        return self.path / CAPACITY_JSON

    @property
    def bisect_json(self) -> Path:
        return self.path / BISECT_JSON

    @property
    def snapshots(self) -> Path:
        return self.path / SNAPSHOTS

    @property
    def explain(self) -> Path:
        return self.path / EXPLAIN

    def step(self, folder: str) -> Path:
        return self.path / STEPS / folder

    @property
    def canary(self) -> Path:
        return self.path / CANARY

    def shard_log(self, shard: str) -> Path:
        return self.path / SHARD_LOGS / f"{shard}.log"


def check_results(path: Path) -> None:
    """Results a command reads are there: a folder that is not is named as such, before a
    command says anything of what it would write into it (its default --output)."""
    if not path.exists():
        raise OltplabError(f"{path}: no such results folder")
    if not ResultsDir(path).ledger.exists():
        raise OltplabError(f"{path}: no oltplab results here ({LEDGER} is missing)")
