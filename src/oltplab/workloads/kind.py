"""What a workload kind is: the data a workload runs on and how it is loaded, the sysbench
call that measures it, its warm-ups and the facts a run records of it. kinds.py is the
registry; sbtest (sysbench's own tables) and tpcc are the built-in kinds, and
tests/support/workload_contract.py is what every registered kind passes.

A kind describes; the runner acts: it runs the calls a kind returns (through the gate that
counts errors and stops adaptive cells, with the protocol's time, interval and rate), keeps
one snapshot of an engine holding every kind's dataset the spec uses, and names the files.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from oltplab.spec import Spec, WorkloadSpec
from oltplab.sysbench.driver import Call
from oltplab.sysbench.transactions import KindResults

# What a row takes on disk unless its kind says otherwise: 400,000 sbtest rows made a
# 100 MiB file with MySQL 8.0 here.
ROW_BYTES = 260
# How fast a loader loads unless its kind says: 400,000 sbtest rows in one table, one
# thread, took 5.8 s here.
PREPARE_ROWS_PER_SECOND = 100_000


class WorkloadKind(ABC):
    name: ClassVar[str]
    # One `[[workloads]]` entry of this kind, as a spec writes it: what the contract test
    # runs the kind with.
    example: ClassVar[str]
    # The plan's estimate of its loader's speed, in rows a second.
    rows_loaded_per_second: ClassVar[float] = PREPARE_ROWS_PER_SECOND
    # What its comparisons are judged on unless the spec says (base/metrics.MEASURES).
    headline_measure: ClassVar[str] = "tps"
    # The transaction types a workload's `mix` may name (none: the kind takes no mix).
    transaction_types: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def dataset_key(self, spec: Spec) -> str:
        """What the kind's prepared data depends on: an engine's snapshot is reused only for
        the same keys, and two workloads of one kind share one dataset."""

    @abstractmethod
    def dataset_rows(self, spec: Spec) -> int:
        """About how many rows `prepare` loads: the plan's estimate of loading and copying."""

    @abstractmethod
    def describe_dataset(self, spec: Spec) -> str:
        """The dataset in a few words, for the progress line while it is loaded."""

    @abstractmethod
    def prepare(self, spec: Spec, action: str, cores: int) -> Call:
        """The loader: sysbench's `prepare` (or `cleanup`, which drops what it made)."""

    @abstractmethod
    def call(self, spec: Spec, workload: WorkloadSpec, threads: int) -> Call:
        """What one measured run (or warm-up) of the workload runs, on which data."""

    @abstractmethod
    def warm_ups(self, spec: Spec, workload: WorkloadSpec) -> list[tuple[WorkloadSpec, int]]:
        """The workloads a session runs before it measures this one, in order, with the
        most seconds each (0: skipped)."""

    @abstractmethod
    def facts(self, spec: Spec, workload: WorkloadSpec) -> dict[str, Any]:
        """What the workload ran, for run.json and the report (JSON values)."""

    def check(self, spec: Spec, workload: WorkloadSpec) -> str | None:
        """What is wrong with the workload for this kind, in one line (None: nothing); the
        spec's own validation has passed. The mix names only the kind's types."""
        for name in workload.mix or {}:
            if name not in self.transaction_types:
                known = ", ".join(self.transaction_types) or "none: it takes no mix"
                return f"mix.{name}: not a transaction type of kind {self.name!r} ({known})"
        return None

    def dataset_bytes(self, spec: Spec) -> int:
        """About how much disk the loaded dataset takes in an engine's datadir (and again in
        its snapshot), checked against the free space before anything is loaded."""
        return self.dataset_rows(spec) * ROW_BYTES

    def results(self, output: str) -> KindResults | None:
        """What the kind measures beyond sysbench's own summary, read from a cell's raw
        output alone, so that a rebuilt ledger reads it again (None: nothing more)."""
        return None
