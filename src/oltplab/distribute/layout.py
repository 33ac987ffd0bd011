"""A distributed run's directory on shared storage:

DIR/distribute.json   what was submitted where (spec digest, shards, scheduler, jobs)
DIR/spec.toml         the spec the shards run, its paths made absolute
DIR/shard-K/          each shard's results directory (ledger, raw files, canaries)
DIR/snapshots/        prepared datasets, shared by the machines
DIR/slurm/, DIR/k8s/  what the scheduler was given, and its logs
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from oltplab.base.errors import OltplabError
from oltplab.base.nesting import load_json
from oltplab.plan import cells_of
from oltplab.plan.blocks import Shard, shard_sessions
from oltplab.spec import Spec
from oltplab.store.directory import ResultsDir
from oltplab.store.files import write_atomic
from oltplab.store.ledger import Ledger
from oltplab.store.status import RunStatus, Status

DISTRIBUTE_JSON = "distribute.json"
SPEC_FILE = "spec.toml"
SNAPSHOTS = "snapshots"


@dataclass
class Distributed:
    root: Path
    spec_digest: str
    shards: int
    scheduler: str
    jobs: list[dict[str, Any]] = field(default_factory=list)  # {"job": id, "shards": [K...]}

    def shard_dir(self, index: int) -> Path:
        return self.root / Shard(index, self.shards).folder

    @property
    def shard_dirs(self) -> list[Path]:
        return [self.shard_dir(k) for k in range(1, self.shards + 1)]

    def save(self) -> None:
        data = {
            "spec_digest": self.spec_digest,
            "shards": self.shards,
            "scheduler": self.scheduler,
            "jobs": self.jobs,
        }
        write_atomic(self.root / DISTRIBUTE_JSON, json.dumps(data, indent=2) + "\n")


def is_distributed(path: Path) -> bool:
    return (path / DISTRIBUTE_JSON).is_file()


def shard_folders(path: Path) -> list[Path]:
    """The shard results directories a folder holds without a distribute.json: a
    Kubernetes results volume, where each pod writes its `shard-K` and nothing else."""
    if not path.is_dir() or ResultsDir(path).ledger.exists() or is_distributed(path):
        return []
    return sorted(p for p in path.glob("shard-*") if ResultsDir(p).ledger.is_file())


def shards_of(path: Path) -> list[Path]:
    """A distributed run's shards, a results volume's, or the path itself (one shard)."""
    if is_distributed(path):
        return read_distributed(path).shard_dirs
    return shard_folders(path) or [path]


def read_distributed(root: Path) -> Distributed:
    try:
        data = load_json((root / DISTRIBUTE_JSON).read_text())
        return Distributed(
            root, str(data["spec_digest"]), int(data["shards"]), str(data["scheduler"]),
            list(data.get("jobs", [])),
        )  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise OltplabError(f"{root / DISTRIBUTE_JSON}: not readable ({exc})") from None


def prepare(root: Path, spec: Spec, shards: int, scheduler: str) -> Distributed:
    """The directory made (or found again, for the same spec and shard count)."""
    if is_distributed(root):
        found = read_distributed(root)
        if (found.spec_digest, found.shards) != (spec.digest(), shards):
            raise OltplabError(
                f"{root}: holds a distributed run of another spec or shard count "
                f"({found.shards} shards); use a new --results directory"
            )
        return found
    if root.exists() and any(root.iterdir()):
        raise OltplabError(f"--results {root}: exists and is not a distributed run's directory")
    root.mkdir(parents=True, exist_ok=True)
    # Paths made absolute (they were resolved beside the spec): the copy runs anywhere.
    text = tomli_w.dumps(spec.model_dump(mode="json", exclude_none=True))
    write_atomic(root / SPEC_FILE, text)
    found = Distributed(root, spec.digest(), shards, scheduler)
    found.save()
    return found


@dataclass(frozen=True)
class ShardState:
    shard: Shard
    path: Path
    counts: dict[str, int]
    planned: int
    last_run: str | None  # the last run's status

    @property
    def complete(self) -> bool:
        """Every planned cell measured (done or failed) and no run in flight."""
        measured = self.counts.get(Status.DONE, 0) + self.counts.get(Status.FAILED, 0)
        return measured >= self.planned and self.last_run not in (None, RunStatus.RUNNING)


def shard_state(spec: Spec, distributed: Distributed, index: int) -> ShardState:
    shard = Shard(index, distributed.shards)
    path = distributed.shard_dir(index)
    planned = len(cells_of(shard_sessions(spec, shard)))
    if not ResultsDir(path).ledger.is_file():
        return ShardState(shard, path, {}, planned, None)
    ledger = Ledger.open(path, create=False)
    try:
        runs = ledger.runs()
        return ShardState(shard, path, ledger.counts(), planned, runs[-1].status if runs else None)
    finally:
        ledger.close()
