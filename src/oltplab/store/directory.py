"""Every name in a results directory, built here and nowhere else: what a run, an
experiment, a report and a merge write there, which of it is the run's own state rather than
a cell's raw files (a merge copies raw files only; import and reports leave the scratch
out), and the patterns that read oltplab's own names back (importers/naming.py).

    <results>/
      ledger.sqlite, journal.jsonl, run.json, .oltplab.lock, oltplab.log, pt-summary.txt
      search.json                    time an unfinished --margin search has spent
      benchmark_logs*/<engine>/...   raw files of the cells (scenario_dir, engine_dir, cell_stem)
      .work/                         scratch (store/scratch.py says where it goes instead):
                                     an engine's working files, named by its family's
                                     Layout (engines/family.py), and prepare output
      report/                        what `oltplab report` writes by default (chart_file)
      capacity.json, bisect.json     what `capacity` and `bisect` found
      bisect.md, flamegraph.html     what `bisect` says of it
      replay.csv, replay.json        what `replay` found; gate.md, gate.xml what `gate` did
      steps/<NN>-<a>-vs-<b>/, explain/, snapshots/   a bisect's steps, its explanation,
                                     their shared snapshots (each step a results directory)
      canary/[<shard>-]<moment>/     a shard's canary runs, each a results directory
      logs/<shard>.log               the shards' logs, after a merge

A cell's raw files, in an engine's folder `<scenario dir>/<family>/<version>/`:

    [run<K>_]Tier<tier>_<RW|RO>_<T>th[_<R>tps][_again<N>].sysbench.txt   the cell's output
    <that stem>.<kind>.<ext>             beside it: status, and each telemetry device's file
    Tier<tier>_<RW|RO>.<kind>.txt        the session's: cnf, vars, status, errlog, ...
    Tier<tier>_<RW|RO>_warmupA.sysbench.txt, ..._warmupB...   its warm-ups

What is not named here: the temporary names a write uses until it is whole (store/files.py,
store/outputs.py), and a distributed run's directory (distribute/layout.py), which holds
results directories rather than being one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from oltplab.base.errors import OltplabError
from oltplab.plan import Cell
from oltplab.spec.fields import DEFAULT_KIND

LEDGER = "ledger.sqlite"
JOURNAL = "journal.jsonl"
RUN_JSON = "run.json"
SEARCH = "search.json"
# The spec a derived run measured (the demo's decision), written out to be run again.
DERIVED_SPEC = "spec.toml"
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
REPLAY_CSV = "replay.csv"
REPLAY_JSON = "replay.json"
GATE_MD = "gate.md"
GATE_XML = "gate.xml"
BISECT_MD = "bisect.md"
FLAMEGRAPH = "flamegraph.html"
# `rebuild`'s scratch while it reads the raw files back: never a cell's raw file either.
REBUILD_SCRATCH = ".rebuild-"

# The run's own state and scratch: never a cell's raw file, so never copied by a merge.
RUN_STATE = frozenset(
    {WORK, LEDGER, JOURNAL, RUN_JSON, SEARCH, LOCK, LOG, REPORT, CANARY, SNAPSHOTS}
)


# --- a cell's raw files: the layout of the 2026 report's raw data -----------------------------

LOCAL_LOGS = "benchmark_logs"
REMOTE_LOGS = "benchmark_remote_logs"
# The reference report's two workloads keep its folder names; any other is named for itself.
_WORKLOAD_DIRS = {"oltp_read_write": "", "oltp_read_only": "_read_only"}
# What a name part keeps; safe_name turns anything else into `_`.
_SAFE = "A-Za-z0-9._+-"
TIER = "Tier"
READ_WRITE, READ_ONLY = "RW", "RO"
REPETITION = "run"
THREADS = "th"
RATE = "tps"
AGAIN = "again"
WARM_UP = "warmup"
WARM_UP_A, WARM_UP_B = WARM_UP + "A", WARM_UP + "B"
SYSBENCH = "sysbench"
SYSBENCH_OUTPUT = f".{SYSBENCH}.txt"
# The kinds of file beside a session's output (`<stem>.<kind>.txt`); a telemetry device's
# raw file is `<cell stem>.<device>.<its suffix>` by the same rule.
CNF, VARS, STATUS, ERRLOG = "cnf", "vars", "status", "errlog"
# In the scratch folder: a step's sysbench output, kept for when the step fails.
PREPARE_OUTPUT = "prepare" + SYSBENCH_OUTPUT
CLEANUP_OUTPUT = "cleanup" + SYSBENCH_OUTPUT

# oltplab's own stems read back, whole: a tier may hold `_` and `.`, a cell a rate.
_SESSION = rf"{TIER}(?P<tier>[{_SAFE}]+)_(?P<mark>{READ_WRITE}|{READ_ONLY})"
SESSION_STEM = re.compile(rf"^{_SESSION}$")
CELL_STEM = re.compile(
    rf"^(?:{REPETITION}(?P<repetition>\d+)_)?{_SESSION}_(?P<threads>\d+){THREADS}"
    rf"(?:_(?P<rate>\d+){RATE})?(?:_{AGAIN}(?P<again>\d+))?$"
)
WARM_UP_STEM = re.compile(rf"(?:^|_){WARM_UP}[A-Z]?$")


def scenario_dir(workload: str, network: bool = False) -> str:
    """benchmark_logs[_read_only] locally, benchmark_remote_logs[_read_only] over a network."""
    stem = REMOTE_LOGS if network else LOCAL_LOGS
    return stem + _WORKLOAD_DIRS.get(workload, f"_{workload}")


def safe_name(text: str) -> str:
    return re.sub(rf"[^{_SAFE}]", "_", text)


def engine_dir(family: str, server_version: str, engine: str, taken: set[str]) -> str:
    """`<family>/<SELECT VERSION()>`, made unique if two engines report the same version."""
    wanted = f"{family}/{safe_name(server_version)}"
    return wanted if wanted not in taken else f"{wanted}-{safe_name(engine)}"


def session_stem(tier: str, read_only: bool) -> str:
    return f"{TIER}{safe_name(tier)}_{READ_ONLY if read_only else READ_WRITE}"


def cell_stem(cell: Cell, read_only: bool, measured_before: int = 0) -> str:
    """A cell's raw files' name; a cell measured again (--rerun-disturbed) keeps the files
    of each earlier measurement, and its new ones say how many came before."""
    prefix = f"{REPETITION}{cell.repetition}_" if cell.repetition > 1 else ""
    # An open-loop cell shares the closed loop's tier and threads: the rate keeps its files apart.
    rate = f"_{cell.rate}{RATE}" if cell.rate else ""
    again = f"_{AGAIN}{measured_before}" if measured_before else ""
    return f"{prefix}{session_stem(cell.tier, read_only)}_{cell.threads}{THREADS}{rate}{again}"


def output_of(stem: Path) -> Path:
    """The sysbench output a cell's (or a step's) stem names."""
    return beside(stem, SYSBENCH)


def stem_of(output: Path) -> Path:
    return output.with_name(output.name.removesuffix(SYSBENCH_OUTPUT))


def prepare_output(folder: Path, kind: str, action: str = "prepare") -> Path:
    """A workload kind's loader output (its `prepare`, or `cleanup` on an endpoint);
    sbtest's, the default kind's, keep the names they had before kinds."""
    if kind == DEFAULT_KIND:
        return folder / (PREPARE_OUTPUT if action == "prepare" else CLEANUP_OUTPUT)
    return folder / f"{action}-{kind}{SYSBENCH_OUTPUT}"


def warm_up_name(position: int) -> str:
    """A session's warm-up by its place among its kind's (0: WARM_UP_A, 1: WARM_UP_B)."""
    return WARM_UP + chr(ord("A") + position)


def warm_up_output(stem: Path, phase: str) -> Path:
    """A session's warm-up output (`phase`: WARM_UP_A or WARM_UP_B)."""
    return output_of(stem.with_name(f"{stem.name}_{phase}"))


def beside(stem: Path, kind: str, suffix: str = "txt") -> Path:
    """`<stem>.<kind>.<suffix>`: a file of a session or a cell beside its sysbench output."""
    return stem.with_name(f"{stem.name}.{kind}.{suffix}")


def damaged(path: Path, stamp: str = "") -> Path:
    """Where an unreadable file is kept aside, rather than overwritten."""
    return path.with_name(f"{path.name}.damaged{f'-{stamp}' if stamp else ''}")


# --- what `oltplab report` writes (into <results>/report unless told elsewhere) -------------

REPORT_MD = "report.md"
# In each folder a report, a site or a gate wrote to (store/outputs.py): each file it wrote, by
# which command, and its digest, so that only those are replaced.
OUTPUT_MARKER = ".oltplab-output"
REPORT_HTML = "report.html"
CHARTS = "charts"


def chart_stem(kind: str, *parts: str) -> str:
    """`<kind>_<part>_...`: a chart's file name without `.png` (the report links it by this)."""
    return "_".join([kind, *(safe_name(part) for part in parts)])


def chart_file(kind: str, *parts: str) -> str:
    return chart_stem(kind, *parts) + ".png"


@dataclass(frozen=True)
class ResultsDir:
    """One results directory and the paths of what oltplab keeps in it."""

    path: Path

    def cells_folder(self, workload: str, network: bool, engine_folder: str) -> Path:
        """Where an engine's raw files of one workload go (each named by cell_stem)."""
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
    def derived_spec(self) -> Path:
        return self.path / DERIVED_SPEC

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

    def step(self, number: int, known: str, other: str) -> Path:
        """A bisect's step: `other` measured against `known`."""
        return self.path / STEPS / f"{number:02d}-{known}-vs-{other}"

    @property
    def canary(self) -> Path:
        return self.path / CANARY

    def canary_run(self, moment: str, shard: str = "") -> Path:
        """A canary's results (`moment`: start or end); a merge's keep their shard's name."""
        return self.canary / (f"{shard}-{moment}" if shard else moment)

    def shard_log(self, shard: str) -> Path:
        return self.path / SHARD_LOGS / f"{shard}.log"


def check_results(path: Path) -> None:
    """Results a command reads are there: a folder that is not is named as such, before a
    command says anything of what it would write into it (its default --output)."""
    if not path.exists():
        raise OltplabError(f"{path}: no such results folder")
    if not ResultsDir(path).ledger.exists():
        raise OltplabError(f"{path}: no oltplab results here ({LEDGER} is missing)")
