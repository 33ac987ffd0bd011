"""One session of a run: an engine made ready on first use, started with a tier's
configuration (its live variables checked against the intent), warmed up, and each of
its pending cells measured with its telemetry; a failed cell is recorded with its reason."""

from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oltplab.base import metrics, nofollow
from oltplab.base.errors import DiskFull, EngineError
from oltplab.base.hostinfo import disk_of
from oltplab.base.stats import steady
from oltplab.base.stopping import Stop
from oltplab.engines.config import check_variables, describe_mismatch, expected_variables
from oltplab.engines.control import format_pairs
from oltplab.engines.endpoint import platform_of
from oltplab.engines.isolation import CpuSplit, pin_server
from oltplab.engines.provision import (
    begin_session,
    endpoint_engine,
    machine_for,
    provisioned_engine,
    tunables,
)
from oltplab.engines.server import EngineState, Server
from oltplab.engines.snapshots import SnapshotStore
from oltplab.engines.supplier import source_of
from oltplab.measure.failures import failure_reason
from oltplab.measure.judgement import Seen, judge
from oltplab.measure.phases import Phases, Stage
from oltplab.measure.request import Display
from oltplab.measure.stopping import Watch
from oltplab.measure.workloads import gated
from oltplab.plan import Cell, Session
from oltplab.spec import LOCAL_HOST, Spec, WorkloadSpec
from oltplab.store import directory as names
from oltplab.store.files import ensure_space
from oltplab.store.ledger import Ledger
from oltplab.store.provenance import RunRecord
from oltplab.store.scratch import scratch_root
from oltplab.sysbench.driver import (
    Job,
    SysbenchRun,
    client_share,
    execute_together,
)
from oltplab.sysbench.kinds import kind_of
from oltplab.sysbench.output import SysbenchOutput
from oltplab.sysbench.reading import read_output
from oltplab.sysbench.transactions import KindResults
from oltplab.telemetry.collectors import Collected, Row, queue_rows
from oltplab.telemetry.devices import CellSite, Telemetry
from oltplab.telemetry.load import Interference, interference
from oltplab.telemetry.registry import devices

log = logging.getLogger("oltplab")


@dataclass
class RunContext:
    """What every session of a run shares."""

    spec: Spec
    results: Path
    ledger: Ledger
    display: Display
    run_id: int
    sysbench: str
    prepare_endpoints: bool
    cleanup_endpoints: bool
    definitions: dict[Cell, str]
    until_cv: float | None
    max_repetitions: int
    telemetry: Telemetry
    record: RunRecord
    snapshots: SnapshotStore | None = None  # datasets shared with other machines
    shard: int | None = None  # K of shard K/N
    rerun_disturbed: bool = False
    split: CpuSplit | None = None  # isolation: the server's CPUs and the client's
    phases: Phases = field(default_factory=Phases)
    # Per cell key: how many earlier results it has set aside (measured again).
    measured_before: dict[str, int] = field(default_factory=dict)
    engines: dict[str, EngineState] = field(default_factory=dict)
    broken: dict[str, str] = field(default_factory=dict)
    instances: list[Server] = field(default_factory=list)
    load_only: Telemetry = field(default_factory=lambda: Telemetry(devices(())))

    def telemetry_of(self, engine: str) -> Telemetry:
        """The run's devices, or the load sampler alone for an engine that turns them off."""
        if self.spec.engine(engine).telemetry is False:
            return self.load_only
        return self.telemetry

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


# --- engines ----------------------------------------------------------------------------------


def engine_key(name: str, host: str) -> str:
    return name if host == LOCAL_HOST else f"{name}@{host}"


def _engine(ctx: RunContext, name: str, host: str) -> EngineState:
    """The engine ready to serve sessions on a host, set up on first use."""
    key = engine_key(name, host)
    if key in ctx.engines:
        return ctx.engines[key]
    engine = ctx.spec.engine(name)
    work = ctx.scratch(key)

    def phase(label: str) -> None:
        ctx.phase(Stage.SETUP, label)

    if engine.is_endpoint:
        state = endpoint_engine(ctx.spec, engine, work, ctx.sysbench, phase, ctx.prepare_endpoints)
    else:
        state = provisioned_engine(
            ctx.spec,
            engine,
            work,
            ctx.sysbench,
            phase,
            ctx.instances.append,
            machine_for(ctx.spec, host),
            ctx.snapshots,
        )
    taken = {
        row.artifact_dir
        for n, row in ctx.ledger.engines().items()
        if n != name and row.artifact_dir
    }
    state.artifact_dir = names.engine_dir(state.family, state.server_version, state.name, taken)
    dist = state.distribution
    source = source_of(engine)
    if engine.is_endpoint and (platform := platform_of(name)):
        source = {**source, "platform": platform}
    ctx.ledger.record_engine(
        name,
        family=state.family,
        version=state.version,
        server_version=state.server_version,
        source=source,
        binary_sha256=dist.binary_sha256 if dist else None,
        archive_sha256=dist.archive_sha256 if dist else None,
        artifact_dir=state.artifact_dir,
    )
    facts: dict[str, Any] = {
        "family": state.family,
        "version": state.version,
        "server_version": state.server_version,
        "source": source,
        "binary_sha256": dist.binary_sha256 if dist else None,
        "archive_sha256": dist.archive_sha256 if dist else None,
        "artifact_dir": state.artifact_dir,
    }
    if (local := state.server.local_work()) is not None:
        facts["datadir_disk"] = disk_of(local)
    ctx.record.engine(key, facts)
    ctx.engines[key] = state
    return state


def _ready(ctx: RunContext, name: str, host: str) -> EngineState | None:
    """The engine set up; None when it could not be (ctx.broken says why)."""
    key = engine_key(name, host)
    if key not in ctx.broken:
        try:
            return _engine(ctx, name, host)
        except EngineError as exc:
            _unless_disk_full(ctx, exc)
            ctx.broken[key] = str(exc)
    return None


def set_up_engines(ctx: RunContext, engines: list[tuple[str, str]]) -> None:
    """(engine, host)s set up now, in this order, rather than at their first sessions: see
    plan/preparing.py for why shards sharing a snapshot store do."""
    for name, host in engines:
        _ready(ctx, name, host)


# --- sessions and cells ----------------------------------------------------------------------


def fail_cells(ctx: RunContext, cells: list[Cell], reason: str) -> None:
    for cell in cells:
        ctx.ledger.record_failed(cell, reason, None)
        ctx.display.note(f"[red]failed[/red] {cell.label}: {reason}")
    log.error("%d cell(s) failed: %s", len(cells), reason)


@dataclass
class Opened:
    """An engine started for a session: its state and where the session's files go."""

    state: EngineState
    stem: Path  # the session's file stem (its option file, variables, error log)


def open_session(ctx: RunContext, session: Session, cells: list[Cell]) -> Opened | None:
    """The session's engine started and warmed up; None (its cells failed) if it could not."""
    state = _ready(ctx, session.engine, session.host)
    if state is None:
        fail_cells(ctx, cells, ctx.broken[engine_key(session.engine, session.host)])
        return None
    stem = results_folder(ctx, state, session) / names.session_stem(
        session.tier, ctx.spec.workload(session.workload).reads_only
    )
    try:
        _start_session(ctx, state, session, stem)
    except EngineError as exc:
        _end_session(ctx, state, stem)
        _unless_disk_full(ctx, exc)
        fail_cells(ctx, cells, str(exc))
        return None
    return Opened(state, stem)


def results_folder(ctx: RunContext, state: EngineState, session: Session) -> Path:
    folder = names.ResultsDir(ctx.results).cells_folder(
        session.workload, session.network, state.artifact_dir
    )
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _measure_cells(ctx: RunContext, opened: Opened, session: Session, cells: list[Cell]) -> bool:
    """The session's cells on the started engine; False when the engine was lost (the
    cells it left are failed)."""
    state = opened.state
    folder = results_folder(ctx, state, session)
    reads_only = ctx.spec.workload(session.workload).reads_only
    try:
        for index, cell in enumerate(cells):
            before = ctx.measured_before.get(cell.key, 0)
            _measure(ctx, state, cell, folder / names.cell_stem(cell, reads_only, before))
            if not state.server.alive() and index + 1 < len(cells):
                _recover(ctx, state, session, opened.stem, cells[index + 1 :])
    except _SessionLost as lost:
        fail_cells(ctx, lost.cells, lost.reason)
        return False
    return True


def close_session(ctx: RunContext, opened: Opened, session: Session) -> None:
    if opened.state.server.alive():
        _describe_warm_engine(ctx, opened.state, session, opened.stem)
    _end_session(ctx, opened.state, opened.stem)


def run_session(ctx: RunContext, session: Session, cells: list[Cell]) -> None:
    opened = open_session(ctx, session, cells)
    if opened is None:
        return
    try:
        _measure_cells(ctx, opened, session, cells)
    finally:
        close_session(ctx, opened, session)


def run_alternating(
    ctx: RunContext, sessions: list[Session], cells: dict[Session, list[Cell]]
) -> None:
    """The sessions in their order, each engine started once for all of a tier's rounds
    and kept running beside the others, so that the cells of a round follow each other
    within seconds: a paired comparison then sees the host as it was seconds apart, not
    the minute a restart and a warm-up take (drift that size is what this host shows).
    Each engine warms up with the heaviest of its sessions (read-write when any writes)."""
    for group in tier_groups(sessions):
        running: dict[str, tuple[Opened, Session]] = {}
        try:
            for session in group:
                chosen = cells.get(session, [])
                if not chosen:
                    continue
                if session.engine not in running:
                    first = heaviest(ctx, [s for s in group if s.engine == session.engine])
                    opened = open_session(ctx, first, chosen)
                    if opened is None:
                        continue
                    running[session.engine] = (opened, first)
                opened = running[session.engine][0]
                if not _measure_cells(ctx, opened, session, chosen):
                    close_session(ctx, *running.pop(session.engine))
        finally:
            for opened, first in running.values():
                close_session(ctx, opened, first)


def tier_groups(sessions: list[Session]) -> list[list[Session]]:
    """The sessions by tier and host, in the order of each group's first session."""
    found: dict[tuple[str, str], list[Session]] = {}
    for session in sessions:
        found.setdefault((session.tier, session.host), []).append(session)
    return list(found.values())


def heaviest(ctx: RunContext, sessions: list[Session]) -> Session:
    writing = [s for s in sessions if not ctx.spec.workload(s.workload).reads_only]
    return (writing or sessions)[0]


def _describe_warm_engine(
    ctx: RunContext, state: EngineState, session: Session, stem: Path
) -> None:
    """The session devices' snapshots, taken after the cells: taken between warm-up and
    measurement they would pause the engine there only when telemetry is on."""
    label = f"{session.engine} {session.tier} {session.workload}"
    telemetry = ctx.telemetry_of(session.engine)
    if telemetry.describes_sessions:
        ctx.phase(Stage.SUMMARIES, f"{label}: telemetry of the warm engine")
    for missing in telemetry.after_session(state.server, stem):
        log.warning("%s: %s", label, missing)


def _unless_disk_full(ctx: RunContext, exc: EngineError) -> None:
    """A failure on a full disk is no result: the run stops (exit 3) and resumes later."""
    if "No space left on device" in str(exc):
        raise DiskFull(f"{exc}; free some space, then run the same command again") from None
    ctx.ensure_space()


def _end_session(ctx: RunContext, state: EngineState, stem: Path) -> None:
    ctx.phases.enter(Stage.SETUP)
    state.server.stop(ctx.spec.protocol.stop_timeout_seconds)
    text = state.server.session_log()
    if text:
        names.beside(stem, names.ERRLOG).write_text(text)


class _SessionLost(Exception):
    def __init__(self, reason: str, cells: list[Cell]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.cells = cells


def _recover(
    ctx: RunContext, state: EngineState, session: Session, stem: Path, remaining: list[Cell]
) -> None:
    """After the engine died: restart it on a fresh snapshot copy and warm up again."""
    if not state.server.owned:
        raise _SessionLost(f"endpoint of {state.name} is unreachable", remaining)
    log.warning("%s died (%s); restarting", state.name, state.server.exit_description())
    state.server.stop(ctx.spec.protocol.stop_timeout_seconds)
    try:
        _start_session(ctx, state, session, stem)
    except EngineError as exc:
        raise _SessionLost(f"engine restart failed: {exc}", remaining) from None


def _start_session(ctx: RunContext, state: EngineState, session: Session, stem: Path) -> None:
    spec, server = ctx.spec, state.server
    label = f"{session.engine} {session.tier} {session.workload}"
    if server.owned:
        ctx.ensure_space("restore the datadir", server)
        ctx.phase(Stage.SETUP, f"{label}: restoring datadir and starting")
    cnf = begin_session(spec, state, session.tier)
    if ctx.split is not None and (pid := server.server_pid()) is not None:
        pin_server(pid, ctx.split)
    if cnf is not None:
        names.beside(stem, names.CNF).write_text(cnf)
        ctx.record.config(session.engine, session.tier, cnf)
    if (link := server.link(state.target())) is not None:
        ctx.record.link(engine_key(session.engine, session.host), link)
        log.info("%s: link round trip %.3f ms, shaping %s", label, link["rtt_ms"], link["shaping"])
    with server.control() as control:
        variables = control.variables()
        status = control.status()
    names.beside(stem, names.VARS).write_text(format_pairs(variables))
    names.beside(stem, names.STATUS).write_text(format_pairs(status))
    ctx.ledger.record_variables(session.engine, session.tier, session.workload, variables)
    mismatches = check_variables(expected_variables(tunables(spec, state, session.tier)), variables)
    if not state.server.owned:
        _refuse_tier_changes(spec, state, session.tier, variables)
    if mismatches:
        first = describe_mismatch(mismatches[0])
        more = f" (and {len(mismatches) - 1} more)" if len(mismatches) > 1 else ""
        if state.server.owned:
            raise EngineError(f"engine {session.engine} tier {session.tier}: {first}{more}")
        # An endpoint is measured as it is; the differences are told, not fixed.
        message = f"endpoint {session.engine} differs from the intent: {first}{more}"
        log.warning(message)
        ctx.display.note(f"[yellow]{message}[/yellow]")
    _warm_up(ctx, state, session, stem, label)


def _refuse_tier_changes(
    spec: Spec, state: EngineState, tier: str, variables: dict[str, str]
) -> None:
    """An endpoint is measured as it is: a tier that asks for settings it does not have
    (beyond the shared [config]) would be a different server, so it is refused."""
    shared = expected_variables(tunables(spec, state, tier, tier_overrides=False))
    wanted = expected_variables(tunables(spec, state, tier))
    changed = {name: value for name, value in wanted.items() if shared.get(name) != value}
    mismatches = check_variables(changed, variables)
    if mismatches:
        raise EngineError(
            f"engine {state.name} tier {tier}: would change the endpoint's configuration "
            f"({describe_mismatch(mismatches[0])}); an endpoint is measured as it is: run it "
            "without this tier, or use a provisioned engine"
        )


def _warm_up(ctx: RunContext, state: EngineState, session: Session, stem: Path, label: str) -> None:
    protocol = ctx.spec.protocol
    workload = ctx.spec.workload(session.workload)
    for position, (warm_up, seconds) in enumerate(kind_of(workload).warm_ups(ctx.spec, workload)):
        name = names.warm_up_name(position)
        if seconds <= 0:
            continue
        ctx.phase(Stage.WARM_UP, f"{label}: warm-up {position + 1} ({warm_up.name})", seconds)
        output = names.warm_up_output(stem, name)
        watch = Watch.of_warm_up(protocol, seconds, output, ctx.scratch("stop"))
        result = _sysbench(
            ctx, state, warm_up, protocol.warmup_threads, seconds, output, watch=watch
        )
        if result.returncode != 0:
            parsed = read_output(output)
            raise EngineError(f"{name} failed: {failure_reason(result, parsed, state)}")
        if watch is not None:
            log.info("%s: %s %s", label, name, watch.outcome().describe())


def _sysbench(
    ctx: RunContext,
    state: EngineState,
    workload: WorkloadSpec,
    threads: int,
    seconds: int,
    output: Path,
    rate: int = 0,
    watch: Watch | None = None,
) -> SysbenchRun:
    """One sysbench run of the workload through the gate; its connection options exist
    only while it runs. Watched, it ends once the watch says so."""
    spec = ctx.spec
    options = state.sysbench_options()
    gate = {"stop_file": str(watch.stop_file)} if watch is not None else {}
    call = gated(kind_of(workload).call(spec, workload, threads), spec, seconds, gate, rate=rate)
    ticks = ctx.display.advance if watch is None else watch.beside(ctx.display.advance)
    with options.present():
        grace = spec.protocol.sysbench_grace_seconds
        job = Job(call.args(ctx.sysbench, options.path), output, state.target(), call.env)
        return execute_together([job], seconds + grace, ticks)[0]


def _interference(parsed: SysbenchOutput, rows: list[Row]) -> Interference | None:
    """How much other load disturbed the steady seconds (after the warm-up cut of the
    per-second TPS, as the analysis cuts it)."""
    if parsed.interval != 1.0 or len(parsed.tps) < 2:
        return None
    cut, _ = steady(parsed.tps)
    other = {s: v for source, name, s, v in rows if (source, name) == metrics.OTHER_CPU}
    steal = {s: v for source, name, s, v in rows if (source, name) == metrics.STEAL}
    return interference(other, steal, cut + 1, len(parsed.tps))


def _measure(ctx: RunContext, state: EngineState, cell: Cell, stem: Path) -> None:
    spec = ctx.spec
    seconds = spec.protocol.measure_seconds
    output = names.output_of(stem)
    ctx.ensure_space("measure a cell")
    ctx.ledger.mark_running(cell, ctx.run_id)
    ctx.phase(Stage.CELLS, cell.label, seconds)
    telemetry = ctx.telemetry_of(cell.engine)
    telemetry.before_cell(CellSite(stem, state.server))
    probe = telemetry.raw_file_of(metrics.ENGINE)
    watch = Watch.of_cell(spec.protocol, cell, output, ctx.scratch("stop"), ctx.ledger, probe)
    try:
        result = _sysbench(
            ctx, state, spec.workload(cell.workload), cell.threads, seconds, output, cell.rate,
            watch,
        )  # fmt: skip
    except KeyboardInterrupt:
        telemetry.abandon()
        ctx.ledger.requeue(failed_too=False)
        raise
    collected = telemetry.after_cell(result.seconds, result.launched)
    stopped = watch.outcome() if watch is not None else None
    record_cell(ctx, state, cell, output, read_output(output), result, collected, stopped)


def _kind_results(workload: WorkloadSpec, output: Path) -> KindResults | None:
    try:
        text = nofollow.read_text(output)
    except OSError:
        return None  # sysbench wrote nothing: its failure is the cell's reason
    return kind_of(workload).results(text)


def record_cell(
    ctx: RunContext,
    state: EngineState,
    cell: Cell,
    output: Path,
    parsed: SysbenchOutput,
    result: SysbenchRun,
    collected: Collected,
    stopped: Stop | None = None,
    round_load: Interference | None = None,
) -> None:
    """A measured cell into the ledger, with its flags and notes, done or failed; an
    adaptive cell is judged against the length the rule gave it, a sliced one against the
    other load its whole round met (`round_load`)."""
    spec = ctx.spec
    seconds = stopped.seconds if stopped is not None else spec.protocol.measure_seconds
    stem = names.stem_of(output)
    artifact = str(output.relative_to(ctx.results))
    alive = state.server.alive()
    if alive:
        try:
            with state.server.control() as control:
                status = format_pairs(control.status())
            names.beside(stem, names.STATUS).write_text(status)
        except EngineError as exc:
            log.warning("%s: status not recorded: %s", cell.label, exc)
    interval = parsed.interval if spec.protocol.order == "sliced" else spec.protocol.report_interval
    # The CPUs sysbench may use: all of them, or the client's share when isolated.
    cores = len(os.sched_getaffinity(0))
    succeeded = result.returncode == 0 and parsed.summary is not None and alive
    if not succeeded:
        ctx.ensure_space()  # a cell that failed on a full disk is measured again
    seen = Seen(
        seconds,
        interval,
        cell.rate,
        client_share(result.cpu_seconds, result.seconds, cell.threads, cores),
        collected.gap,
        stopped,
        round_load or _interference(parsed, collected.rows),
        tuple(collected.notes),
        None if succeeded else failure_reason(result, parsed, state, alive),
    )
    outcome = judge(
        parsed,
        seen,
        artifact,
        telemetry=tuple(collected.rows + queue_rows(parsed.queue)),
        clock=dataclasses.asdict(collected.clock) if collected.clock else None,
        kind_results=_kind_results(spec.workload(cell.workload), output),
    )
    ctx.ledger.record_result(cell, outcome)
    flags, reason = outcome.flags, outcome.reason
    if parsed.summary is not None and reason is None:
        marks = f" [yellow]({', '.join(flags)})[/yellow]" if flags else ""
        ctx.display.note(f"[green]done[/green] {cell.label}: {parsed.summary.tps:,.1f} tps{marks}")
        log.info("%s done: %.1f tps %s", cell.label, parsed.summary.tps, list(flags))
    else:
        ctx.display.note(f"[red]failed[/red] {cell.label}: {reason}")
        log.error("%s failed: %s", cell.label, reason)
