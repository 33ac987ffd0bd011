"""A run, open on its results: the request it was built from and what was resolved from it
(frozen), and the little that changes as it goes: the engines set up or broken, the
servers started, each cell's results set aside, the clock of its phases. Sessions, orders
and round policies all work on one open Run; the engines it sets up serve them all."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oltplab.base.errors import DiskFull, EngineError
from oltplab.base.hostinfo import disk_of
from oltplab.engines.isolation import CpuSplit
from oltplab.engines.provision import endpoint_engine, machine_for, provisioned_engine
from oltplab.engines.server import EngineState, Server
from oltplab.engines.snapshots import SnapshotStore
from oltplab.engines.supplier import source_of
from oltplab.measure.phases import Phases, Stage
from oltplab.measure.request import Display, RunRequest
from oltplab.plan import Cell, Session, plan_seconds
from oltplab.spec import LOCAL_HOST, EngineSpec, Spec
from oltplab.store import directory as names
from oltplab.store.files import ensure_space
from oltplab.store.ledger import Ledger
from oltplab.store.provenance import RunRecord
from oltplab.store.scratch import scratch_root
from oltplab.telemetry.devices import Telemetry
from oltplab.telemetry.registry import devices

log = logging.getLogger("oltplab")


@dataclass(frozen=True)
class Resolved:
    """What a run resolved from its request before measuring anything."""

    results: Path  # the request's, made absolute
    sysbench: str  # the binary preflight found
    run_id: int  # the ledger's row for this run
    definitions: dict[Cell, str]  # each planned cell's digest
    telemetry: Telemetry
    record: RunRecord  # run.json
    snapshots: SnapshotStore | None  # datasets shared with other machines
    split: CpuSplit | None  # isolation: the server's CPUs and the client's


@dataclass(frozen=True)
class Round:
    """Cells to measure next, by session, in the sessions' order."""

    sessions: list[Session]
    cells: dict[Session, list[Cell]]

    @classmethod
    def whole(cls, sessions: list[Session]) -> Round:
        return cls(sessions, {s: list(s.cells) for s in sessions})

    def keys(self) -> set[str]:
        return {cell.key for chosen in self.cells.values() for cell in chosen}


def engine_key(name: str, host: str) -> str:
    return name if host == LOCAL_HOST else f"{name}@{host}"


@dataclass(eq=False)
class Run:
    request: RunRequest
    resolved: Resolved
    ledger: Ledger
    display: Display
    phases: Phases
    # Per cell key: how many earlier results it has set aside (measured again).
    measured_before: dict[str, int]
    engines: dict[str, EngineState] = field(default_factory=dict)
    broken: dict[str, str] = field(default_factory=dict)  # engine key: why it is not set up
    instances: list[Server] = field(default_factory=list)  # the servers this run started
    _load_only: Telemetry = field(default_factory=lambda: Telemetry(devices(())))

    @property
    def spec(self) -> Spec:
        return self.request.spec

    @property
    def results(self) -> Path:
        return self.resolved.results

    def telemetry_of(self, engine: str) -> Telemetry:
        """The run's devices, or the load sampler alone for an engine that turns them off."""
        if self.spec.engine(engine).telemetry is False:
            return self._load_only
        return self.resolved.telemetry

    def phase(self, stage: Stage, label: str, seconds: float = 0) -> None:
        """The person watching told, and the run's clock moved on to the stage."""
        self.phases.enter(stage)
        self.display.phase(label, seconds)

    def scratch(self, key: str) -> Path:
        """Where an engine's datadir, snapshot and prepare output go: never results."""
        return scratch_root(self.results) / names.safe_name(key)

    def ensure_space(self, what: str = "go on", restoring: Server | None = None) -> None:
        """Stop (DiskFull) unless both disks a run writes have room: the results', and the
        work folder's, where engines write and `restoring` would copy its datadir."""
        work = restoring.local_work() if restoring is not None else None
        restore = restoring.restore_bytes() if restoring is not None else 0
        ensure_space({self.results: 0, work or scratch_root(self.results): restore}, what)

    def unless_disk_full(self, exc: EngineError) -> None:
        """A failure on a full disk is no result: the run stops (exit 3) and resumes later."""
        if "No space left on device" in str(exc):
            raise DiskFull(f"{exc}; free some space, then run the same command again") from None
        self.ensure_space()

    def fail_cells(self, cells: list[Cell], reason: str) -> None:
        for cell in cells:
            self.ledger.record_failed(cell, reason, None)
            self.display.note(f"[red]failed[/red] {cell.label}: {reason}")
        log.error("%d cell(s) failed: %s", len(cells), reason)

    def add_cells(self, cells: Iterable[Cell]) -> None:
        """Cells beyond the plan (more rounds), each defined as its group is in the plan."""
        groups = {cell.group: digest for cell, digest in self.resolved.definitions.items()}
        self.ledger.register((cell, groups[cell.group]) for cell in cells)

    def expect(self, round_: Round) -> None:
        """The time a round beyond the plan takes added to what the person watching was
        told."""
        self.display.extend(plan_seconds(self.spec, round_.sessions, round_.keys()))

    def respec(self, spec: Spec, text: str) -> None:
        """The spec the results now answer to (a search's, with the rounds it has added)."""
        self.ledger.set_meta("spec", text)
        self.ledger.set_meta("spec_digest", spec.digest())
        self.resolved.record.respec(text, spec.digest())

    # --- engines --------------------------------------------------------------------------

    def ready(self, name: str, host: str) -> EngineState | None:
        """The engine set up on first use; None when it could not be (`broken` says why)."""
        key = engine_key(name, host)
        if key in self.engines:
            return self.engines[key]
        if key not in self.broken:
            try:
                self.engines[key] = self._set_up(name, host)
                return self.engines[key]
            except EngineError as exc:
                self.unless_disk_full(exc)
                self.broken[key] = str(exc)
        return None

    def _set_up(self, name: str, host: str) -> EngineState:
        engine, spec = self.spec.engine(name), self.spec
        work = self.scratch(engine_key(name, host))

        def phase(label: str) -> None:
            self.phase(Stage.SETUP, label)

        sysbench = self.resolved.sysbench
        if engine.is_endpoint:
            prepare = self.request.prepare_endpoints
            state = endpoint_engine(spec, engine, work, sysbench, phase, prepare)
        else:
            state = provisioned_engine(
                spec, engine, work, sysbench, phase, self.instances.append,
                machine_for(spec, host), self.resolved.snapshots,
            )  # fmt: skip
        taken = {
            row.artifact_dir
            for n, row in self.ledger.engines().items()
            if n != name and row.artifact_dir
        }
        state.artifact_dir = names.engine_dir(state.family, state.server_version, name, taken)
        facts = _engine_facts(state, engine)
        self.ledger.record_engine(name, **facts)
        if (local := state.server.local_work()) is not None:
            facts["datadir_disk"] = disk_of(local)
        self.resolved.record.engine(engine_key(name, host), facts)
        return state


def _engine_facts(state: EngineState, engine: EngineSpec) -> dict[str, Any]:
    """What the ledger and run.json both say of an engine."""
    dist = state.distribution
    source = source_of(engine)
    if state.platform:
        source = {**source, "platform": state.platform}
    return {
        "family": state.family,
        "version": state.version,
        "server_version": state.server_version,
        "source": source,
        "binary_sha256": dist.binary_sha256 if dist else None,
        "archive_sha256": dist.archive_sha256 if dist else None,
        "artifact_dir": state.artifact_dir,
    }
