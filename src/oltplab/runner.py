"""The runner: turn a spec into measured cells in the ledger, resumably.

Per engine the dataset is prepared once and snapshotted; every session (engine x tier x
workload, or one round of it) starts the engine on a fresh copy of that snapshot with the
tier's configuration, checks the live variables against the intent, warms up, and
measures each pending cell. A failed cell is stored as failed with its reason and the
matrix goes on; a killed run resumes at the cell that was in flight.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import logging
import os
import signal
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import FrameType
from typing import Any, Protocol

from oltplab import __version__
from oltplab.engines.config import check_variables, describe_mismatch, expected_variables
from oltplab.engines.control import Control, format_pairs
from oltplab.engines.launcher import PrivateInstance
from oltplab.engines.remote import RemoteInstance
from oltplab.engines.supplier import check_tarball, source_of
from oltplab.errors import DiskFull, EngineError, OltplabError, SpecError
from oltplab.hostinfo import describe_host, memory_bytes
from oltplab.hosts import Host, SshHost
from oltplab.ledger import Ledger
from oltplab.network import round_trip_ms
from oltplab.plan import (
    Cell,
    Session,
    build_plan,
    cell_stem,
    cells_of,
    extra_round,
    needing_more,
    safe_name,
    scenario_dir,
    session_stem,
)
from oltplab.provenance import RunRecord, disk_of, sysbench_facts
from oltplab.servers import (
    EngineState,
    artifact_dir,
    endpoint_engine,
    provisioned_engine,
    sysbench_prepare,
    tunables,
    write_cnf,
)
from oltplab.sizes import format_size
from oltplab.spec import LOCAL_HOST, Spec, TarballSource, WorkloadSpec, cell_definition_digest
from oltplab.store.files import ensure_space, os_problem
from oltplab.store.lock import ResultsLock
from oltplab.sysbench import (
    CLIENT_BOUND_SHARE,
    TELEMETRY_GAP,
    SysbenchRun,
    client_share,
    command,
    execute,
    find_sysbench,
    read_output,
    stall_notes,
    sysbench_version,
    validity_flags,
)
from oltplab.telemetry.collectors import CellTelemetry, Collected
from oltplab.telemetry.snapshots import engine_summary, host_summary
from oltplab.workloads import check_workloads, distribution, sysbench_test, workload_facts

log = logging.getLogger("oltplab")


class Display(Protocol):
    """What the runner tells the person watching; the CLI draws it with Rich."""

    def start(self, total_seconds: float) -> None: ...
    def phase(self, label: str, seconds: float) -> None: ...
    def advance(self, seconds: float) -> None: ...
    def extend(self, seconds: float) -> None: ...
    def note(self, message: str) -> None: ...
    def stop(self) -> None: ...


@dataclass
class Outcome:
    counts: dict[str, int]
    failed: list[sqlite3.Row]
    interrupted: bool = False


@dataclass
class _Context:
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
    telemetry: bool
    record: RunRecord
    engines: dict[str, EngineState] = field(default_factory=dict)
    broken: dict[str, str] = field(default_factory=dict)
    instances: list[PrivateInstance] = field(default_factory=list)


# --- checks before anything is provisioned ---------------------------------------------------


def preflight(spec: Spec, origin: str) -> str:
    """Host-dependent checks; returns the sysbench binary."""
    memory = memory_bytes()
    provisioned = any(not engine.is_endpoint for engine in spec.engines)
    for index, tier in enumerate(spec.tier_list):
        pool = spec.resolve(tier).buffer_pool
        if provisioned and memory and pool >= memory:
            where = f"tiers[{index}].buffer_pool" if spec.tiers else "config.buffer_pool"
            raise SpecError(
                f"{origin}: {where}: {format_size(pool)} is larger than this machine's memory "
                f"({memory / 1024**3:.1f}G); choose a smaller buffer pool"
            )
    for engine in spec.engines:
        if isinstance(engine.source, TarballSource):
            check_tarball(engine.source)
    sysbench = find_sysbench()
    check_workloads(spec, sysbench, origin)
    return sysbench


def check_compatible(stored: dict[str, str], planned: dict[str, str], results: Path) -> None:
    """A results directory only accepts the spec it was made with, or one that adds cells.

    Cells are compared by group (the cell without its repetition), so repetitions beyond
    the spec's, which adaptive runs add, belong to their group.
    """
    groups = {key.rsplit("|", 1)[0]: definition for key, definition in planned.items()}
    for key, definition in stored.items():
        group = key.rsplit("|", 1)[0]
        if group not in groups:
            raise OltplabError(
                f"{results}: holds results for cell {group.replace('|', ' ')} that this spec no "
                "longer has; use a new --results directory (a spec may only add cells)"
            )
        if groups[group] != definition:
            raise OltplabError(
                f"{results}: cell {group.replace('|', ' ')} was measured with a different "
                "engine, config, dataset, workload or protocol; use a new --results directory"
            )


# --- the run ---------------------------------------------------------------------------------


def plan_seconds(spec: Spec, sessions: list[Session], pending: set[str]) -> float:
    total = 0.0
    for session in sessions:
        todo = [c for c in session.cells if c.key in pending]
        if not todo:
            continue
        workload = spec.workload(session.workload)
        total += spec.protocol.warmup_ro_seconds
        if not workload.reads_only:
            total += spec.protocol.warmup_rw_seconds
        total += len(todo) * spec.protocol.measure_seconds
    return total


def run(
    spec: Spec,
    spec_text: str,
    origin: str,
    results: Path,
    display: Display,
    *,
    retry_failed: bool = False,
    prepare_endpoints: bool = False,
    cleanup_endpoints: bool = False,
    until_cv: float | None = None,
    max_repetitions: int = 10,
    telemetry: bool = True,
    spec_base: Path | None = None,
    rerun_of: dict[str, Any] | None = None,
) -> Outcome:
    sysbench_binary = preflight(spec, origin)
    results = results.resolve()
    sessions = build_plan(spec)
    planned = {
        cell.key: cell_definition_digest(spec, cell.engine, cell.tier, cell.workload)
        for cell in cells_of(sessions)
    }
    with ResultsLock(results):
        ledger = Ledger.open(results)
        try:
            check_compatible(ledger.definitions(), planned, results)
            # We hold the lock: a run the ledger still calls running was killed.
            ledger.end_stale_runs()
            ledger.register((cell, planned[cell.key]) for cell in cells_of(sessions))
            requeued = ledger.requeue(failed_too=retry_failed)
            ledger.set_meta("spec", spec_text)
            ledger.set_meta("spec_digest", spec.digest())
            _log_to(results)
            if requeued:
                log.info("%d cell(s) from an earlier run go back to pending", requeued)
            sysbench = sysbench_version(sysbench_binary)
            provenance = {
                "oltplab": __version__,
                "sysbench": sysbench,
                "command": " ".join(sys.argv),
                "spec_origin": origin,
                "host": describe_host(),
            }
            run_id = ledger.begin_run(spec.digest(), provenance)
            record = RunRecord.begin(
                results,
                spec_text=spec_text,
                spec_origin=origin,
                spec_base=spec_base or Path.cwd(),
                spec_digest=spec.digest(),
                command=provenance["command"],
                sysbench=sysbench_facts(sysbench_binary, sysbench),
                workloads=workload_facts(spec),
                telemetry=telemetry,
                rerun_of=rerun_of,
            )
            if telemetry and (missing := host_summary(results)):
                log.warning("host summary: %s", missing)
            context = _Context(
                spec,
                results,
                ledger,
                display,
                run_id,
                sysbench_binary,
                prepare_endpoints,
                cleanup_endpoints,
                {cell: planned[cell.key] for cell in cells_of(sessions)},
                until_cv,
                max_repetitions,
                telemetry,
                record,
            )
            return _run_sessions(context, sessions)
        finally:
            ledger.close()


def _log_to(results: Path) -> None:
    target = str((results / "oltplab.log").resolve())
    for handler in log.handlers:
        if isinstance(handler, logging.FileHandler) and handler.baseFilename == target:
            return
    handler = logging.FileHandler(target)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _run_sessions(ctx: _Context, sessions: list[Session]) -> Outcome:
    # A SIGTERM (a scheduler's or CI's timeout) stops as cleanly as Ctrl-C does.
    signal.signal(signal.SIGTERM, _interrupt)
    status = ctx.ledger.status_of()
    pending = {key for key, state in status.items() if state == "pending"}
    todo = [s for s in sessions if any(c.key in pending for c in s.cells)]
    ctx.display.start(plan_seconds(ctx.spec, todo, pending))
    interrupted = False
    try:
        for session in todo:
            _run_session(ctx, session, [c for c in session.cells if c.key in pending])
        if ctx.until_cv is not None:
            _adaptive_rounds(ctx, sessions)
    except KeyboardInterrupt:
        interrupted = True
        log.warning("interrupted; the cell in flight will run again on resume")
    except (DiskFull, OSError) as stopped:
        if isinstance(stopped, OSError) and stopped.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        # Told now, before the clean-up below frees the datadir's space.
        full = stopped if isinstance(stopped, DiskFull) else os_problem(stopped, ctx.results)
        # The cell in flight stays running in the ledger and goes back to pending on resume.
        log.error("stopped: %s", full)
        with contextlib.suppress(OltplabError):
            ctx.ledger.finish_run(ctx.run_id, "stopped: disk full")
        raise full from None
    finally:
        if ctx.cleanup_endpoints and not interrupted:
            _cleanup_endpoints(ctx)
        for instance in ctx.instances:
            instance.stop(ctx.spec.protocol.stop_timeout_seconds)
            # Sessions always start from the snapshot, so the last datadir is only disk used.
            instance.discard_datadir()
        ctx.display.stop()
    counts = ctx.ledger.counts()
    failed = [row for row in ctx.ledger.cells() if row["status"] == "failed"]
    ctx.ledger.finish_run(
        ctx.run_id, "interrupted" if interrupted else ("failed" if failed else "done")
    )
    return Outcome(counts, failed, interrupted)


def _cleanup_endpoints(ctx: _Context) -> None:
    for key, state in ctx.engines.items():
        if state.provisioned:
            continue
        ctx.display.phase(f"{key}: sysbench cleanup on the endpoint", 0)
        try:
            sysbench_prepare(
                ctx.spec,
                ctx.sysbench,
                state,
                ctx.results / ".work" / safe_name(key) / "cleanup.sysbench.txt",
                "cleanup",
            )
            log.info("%s: sbtest tables dropped (--cleanup)", key)
        except EngineError as exc:
            log.error("%s", exc)
            ctx.display.note(f"[red]{exc}[/red]")


def _adaptive_rounds(ctx: _Context, sessions: list[Session]) -> None:
    """Repeat cell groups whose TPS still varies more than --until-cv, round by round."""
    assert ctx.until_cv is not None
    template = [s for s in sessions if all(c.repetition == 1 for c in s.cells)] or sessions
    definitions = {c.group: d for c, d in ctx.definitions.items()}
    while True:
        tps: dict[str, list[float]] = {}
        reps: dict[str, int] = {}
        for row in ctx.ledger.cells():
            group = row["key"].rsplit("|", 1)[0]
            reps[group] = max(reps.get(group, 0), row["repetition"])
            if row["status"] == "done":
                tps.setdefault(group, []).append(row["tps"])
        needing = needing_more(tps, ctx.until_cv, ctx.max_repetitions)
        needing &= {g for g in needing if reps[g] < ctx.max_repetitions}
        if not needing:
            return
        round_ = extra_round(template, needing, {g: reps[g] + 1 for g in reps})
        log.info(
            "adaptive: %d cell group(s) above CV %.3f; one more round", len(needing), ctx.until_cv
        )
        ctx.ledger.register((c, definitions[c.group]) for s in round_ for c in s.cells)
        ctx.display.extend(plan_seconds(ctx.spec, round_, {c.key for s in round_ for c in s.cells}))
        for session in round_:
            _run_session(ctx, session, list(session.cells))


# --- engines ----------------------------------------------------------------------------------


def _machine(spec: Spec, host: str) -> Host:
    if host == LOCAL_HOST:
        return Host()
    found = spec.host(host)
    return SshHost(
        name=found.name,
        destination=found.ssh,
        port=found.port,
        identity_file=found.identity_file,
        workdir=PurePosixPath(found.workdir),
        options=tuple(found.options.items()),
    )


def _engine_key(name: str, host: str) -> str:
    return name if host == LOCAL_HOST else f"{name}@{host}"


def _engine(ctx: _Context, name: str, host: str) -> EngineState:
    """The engine ready to serve sessions on a host, set up on first use."""
    key = _engine_key(name, host)
    if key in ctx.engines:
        return ctx.engines[key]
    engine = ctx.spec.engine(name)
    work = ctx.results / ".work" / safe_name(key)

    def phase(label: str) -> None:
        ctx.display.phase(label, 0)

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
            _machine(ctx.spec, host),
        )
    taken = {row["artifact_dir"] for n, row in ctx.ledger.engines().items() if n != name}
    state.artifact_dir = artifact_dir(state, taken)
    dist = state.distribution
    ctx.ledger.record_engine(
        name,
        family=state.family,
        version=state.version,
        server_version=state.server_version,
        source=source_of(engine),
        binary_sha256=dist.binary_sha256 if dist else None,
        archive_sha256=dist.archive_sha256 if dist else None,
        artifact_dir=state.artifact_dir,
    )
    facts = {
        "family": state.family,
        "version": state.version,
        "server_version": state.server_version,
        "source": source_of(engine),
        "binary_sha256": dist.binary_sha256 if dist else None,
        "archive_sha256": dist.archive_sha256 if dist else None,
        "artifact_dir": state.artifact_dir,
    }
    if isinstance(state.server, PrivateInstance) and state.server.machine.is_local:
        facts["datadir_disk"] = disk_of(state.server.layout.work)
    ctx.record.engine(key, facts)
    ctx.engines[key] = state
    return state


# --- sessions and cells ----------------------------------------------------------------------


def _fail(ctx: _Context, cells: list[Cell], reason: str) -> None:
    for cell in cells:
        ctx.ledger.record_failed(cell, reason, None)
        ctx.display.note(f"[red]failed[/red] {_label(cell)}: {reason}")
    log.error("%d cell(s) failed: %s", len(cells), reason)


def _label(cell: Cell) -> str:
    rep = f" run {cell.repetition}" if cell.repetition > 1 else ""
    return f"{cell.engine} {cell.tier} {cell.workload} {cell.threads}th{rep}"


def _run_session(ctx: _Context, session: Session, cells: list[Cell]) -> None:
    key = _engine_key(session.engine, session.host)
    if key in ctx.broken:
        _fail(ctx, cells, ctx.broken[key])
        return
    try:
        state = _engine(ctx, session.engine, session.host)
    except EngineError as exc:
        _unless_disk_full(ctx, exc)
        ctx.broken[key] = str(exc)
        _fail(ctx, cells, str(exc))
        return
    workload = ctx.spec.workload(session.workload)
    folder = ctx.results / scenario_dir(workload.name, session.network) / state.artifact_dir
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / session_stem(session.tier, workload.reads_only)
    try:
        _start_session(ctx, state, session, stem)
    except EngineError as exc:
        _end_session(ctx, state, stem)
        _unless_disk_full(ctx, exc)
        _fail(ctx, cells, str(exc))
        return
    try:
        for index, cell in enumerate(cells):
            _measure(ctx, state, cell, folder / cell_stem(cell, workload.reads_only))
            if not state.server.alive() and index + 1 < len(cells):
                _recover(ctx, state, session, stem, cells[index + 1 :])
    except _SessionLost as lost:
        _fail(ctx, lost.cells, lost.reason)
    finally:
        _end_session(ctx, state, stem)


def _unless_disk_full(ctx: _Context, exc: EngineError) -> None:
    """A failure on a full disk is no result: the run stops (exit 3) and resumes later."""
    if "No space left on device" in str(exc):
        raise DiskFull(f"{exc}; free some space, then run the same command again") from None
    ensure_space(ctx.results)


def _end_session(ctx: _Context, state: EngineState, stem: Path) -> None:
    state.server.stop(ctx.spec.protocol.stop_timeout_seconds)
    text = state.server.session_log()
    if text:
        stem.with_name(stem.name + ".errlog.txt").write_text(text)


class _SessionLost(Exception):
    def __init__(self, reason: str, cells: list[Cell]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.cells = cells


def _recover(
    ctx: _Context, state: EngineState, session: Session, stem: Path, remaining: list[Cell]
) -> None:
    """After the engine died: restart it on a fresh snapshot copy and warm up again."""
    if not state.provisioned:
        raise _SessionLost(f"endpoint of {state.name} is unreachable", remaining)
    log.warning("%s died (%s); restarting", state.name, state.server.exit_description())
    state.server.stop(ctx.spec.protocol.stop_timeout_seconds)
    try:
        _start_session(ctx, state, session, stem)
    except EngineError as exc:
        raise _SessionLost(f"engine restart failed: {exc}", remaining) from None


def _start_session(ctx: _Context, state: EngineState, session: Session, stem: Path) -> None:
    spec, server = ctx.spec, state.server
    label = f"{session.engine} {session.tier} {session.workload}"
    if isinstance(server, PrivateInstance):
        ensure_space(ctx.results, server.restore_bytes(), "restore the datadir")
        ctx.display.phase(f"{label}: restoring datadir and starting", 0)
        server.restore()
        port = server.free_port()
        cnf = write_cnf(spec, state, session.tier, port)
        stem.with_name(stem.name + ".cnf.txt").write_text(cnf)
        ctx.record.config(session.engine, session.tier, cnf)
        server.start(port, spec.protocol.start_timeout_seconds)
        if isinstance(server, RemoteInstance):
            target = state.target()
            rtt = round_trip_ms(
                lambda: Control(
                    host=target.host, port=target.port, user=target.user, password=target.password
                )
            )
            link = {"rtt_ms": round(rtt, 3), "shaping": server.shaping}
            ctx.record.link(_engine_key(session.engine, session.host), link)
            log.info(
                "%s: link round trip %.3f ms, shaping %s", label, link["rtt_ms"], link["shaping"]
            )
    with server.control() as control:
        variables = control.variables()
        status = control.status()
    stem.with_name(stem.name + ".vars.txt").write_text(format_pairs(variables))
    stem.with_name(stem.name + ".status.txt").write_text(format_pairs(status))
    ctx.ledger.record_variables(session.engine, session.tier, session.workload, variables)
    mismatches = check_variables(expected_variables(tunables(spec, state, session.tier)), variables)
    if not state.provisioned:
        _refuse_tier_changes(spec, state, session.tier, variables)
    if mismatches:
        first = describe_mismatch(mismatches[0])
        more = f" (and {len(mismatches) - 1} more)" if len(mismatches) > 1 else ""
        if state.provisioned:
            raise EngineError(f"engine {session.engine} tier {session.tier}: {first}{more}")
        # An endpoint is measured as it is; the differences are told, not fixed.
        message = f"endpoint {session.engine} differs from the intent: {first}{more}"
        log.warning(message)
        ctx.display.note(f"[yellow]{message}[/yellow]")
    if ctx.telemetry:
        ctx.display.phase(f"{label}: pt-mysql-summary", 0)
        summary = stem.with_name(stem.name + ".pt-mysql-summary.txt")
        if missing := engine_summary(server, summary):
            log.warning("%s: %s", label, missing)
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


def _warm_up(ctx: _Context, state: EngineState, session: Session, stem: Path, label: str) -> None:
    protocol = ctx.spec.protocol
    phases = [("warmupA", "oltp_read_only", protocol.warmup_ro_seconds)]
    if not ctx.spec.workload(session.workload).reads_only:
        phases.append(("warmupB", "oltp_read_write", protocol.warmup_rw_seconds))
    for name, test, seconds in phases:
        if seconds <= 0:
            continue
        ctx.display.phase(f"{label}: {name}", seconds)
        output = stem.with_name(f"{stem.name}_{name}.sysbench.txt")
        # A warm-up runs with the options the spec gives its test, on the dataset's rows.
        listed = {w.name: w.options for w in ctx.spec.workloads}
        warm_up = WorkloadSpec(name=test, options=listed.get(test, {}))
        result = _sysbench(ctx, state, warm_up, protocol.warmup_threads, seconds, output)
        if result.returncode != 0:
            parsed = read_output(output)
            raise EngineError(f"{name} failed: {_failure_reason(result, parsed.fatal, state)}")


def _sysbench(
    ctx: _Context,
    state: EngineState,
    workload: WorkloadSpec,
    threads: int,
    seconds: int,
    output: Path,
) -> SysbenchRun:
    """One sysbench run of the workload; its connection options exist only while it runs."""
    spec = ctx.spec
    rand_type, pareto_h = distribution(spec, workload)
    options = state.sysbench_options()
    args = command(
        ctx.sysbench,
        sysbench_test(workload),
        "run",
        options.path,
        tables=spec.dataset.tables,
        table_size=spec.dataset.table_size,
        threads=threads,
        seconds=seconds,
        report_interval=spec.protocol.report_interval,
        rand_type=rand_type,
        rand_pareto_h=pareto_h,
        options=workload.run_options(),
    )
    with options.present():
        grace = spec.protocol.sysbench_grace_seconds
        return execute(args, output, seconds + grace, ctx.display.advance, state.target())


def _failure_reason(
    result: SysbenchRun, fatal: tuple[str, ...], state: EngineState, alive: bool | None = None
) -> str:
    parts = []
    alive = state.server.alive() if alive is None else alive
    if not alive:
        parts.append(f"{state.server.exit_description()} during the cell")
    if result.timed_out:
        parts.append(f"sysbench did not finish within {result.seconds:.0f} s and was killed")
    elif result.returncode is not None and result.returncode < 0:
        parts.append(f"sysbench was killed by signal {-result.returncode}")
    elif result.returncode not in (0, None):
        parts.append(f"sysbench exited with code {result.returncode}")
    if fatal:
        parts.append(f"sysbench said: {fatal[0][:300]}")
    log_tail = state.server.session_log_tail(3)
    if log_tail and not alive:
        parts.append(f"error log: {log_tail[-600:]}")
    return "; ".join(parts) or "sysbench printed no summary"


def _cell_telemetry(state: EngineState, stem: Path) -> CellTelemetry:
    server = state.server
    if isinstance(server, PrivateInstance):
        # The server process's CPU is read from /proc, so only where oltplab runs.
        local = server.machine.is_local and server.process is not None
        pid = server.process.pid if local and server.process else None
        return CellTelemetry(stem, server.control, pid, server.machine)
    return CellTelemetry(stem, server.control, None, Host())


def _measure(ctx: _Context, state: EngineState, cell: Cell, stem: Path) -> None:
    spec = ctx.spec
    seconds = spec.protocol.measure_seconds
    output = stem.with_name(stem.name + ".sysbench.txt")
    artifact = str(output.relative_to(ctx.results))
    ensure_space(ctx.results, what="measure a cell")
    ctx.ledger.mark_running(cell, ctx.run_id)
    ctx.display.phase(_label(cell), seconds)
    telemetry = _cell_telemetry(state, stem) if ctx.telemetry else None
    try:
        if telemetry:
            telemetry.start()
        result = _sysbench(ctx, state, spec.workload(cell.workload), cell.threads, seconds, output)
    except KeyboardInterrupt:
        if telemetry:
            telemetry.stop()
        ctx.ledger.requeue(failed_too=False)
        raise
    collected = telemetry.finish(result.seconds) if telemetry else Collected()
    parsed = read_output(output)
    alive = state.server.alive()
    if alive:
        try:
            with state.server.control() as control:
                status = format_pairs(control.status())
            stem.with_name(stem.name + ".status.txt").write_text(status)
        except EngineError as exc:
            log.warning("%s: status not recorded: %s", _label(cell), exc)
    flags = validity_flags(parsed, seconds, spec.protocol.report_interval)
    share = client_share(result.cpu_seconds, result.seconds, cell.threads, os.cpu_count() or 1)
    if share > CLIENT_BOUND_SHARE:
        flags.append("client-bound")
    if collected.gap:
        flags.append(TELEMETRY_GAP)
    notes = ", ".join(
        filter(None, [stall_notes(parsed), f"client CPU {share:.0%}", *collected.notes])
    )
    succeeded = result.returncode == 0 and parsed.summary is not None and alive
    if not succeeded:
        ensure_space(ctx.results)  # a cell that failed on a full disk is measured again
    reason = None if succeeded else _failure_reason(result, parsed.fatal, state, alive)
    ctx.ledger.record_result(
        cell,
        parsed.summary,
        parsed.intervals,
        flags,
        artifact,
        reason,
        notes,
        collected.rows,
        clock=dataclasses.asdict(collected.clock) if collected.clock else None,
    )
    if parsed.summary is not None and reason is None:
        marks = f" [yellow]({', '.join(flags)})[/yellow]" if flags else ""
        ctx.display.note(
            f"[green]done[/green] {_label(cell)}: {parsed.summary.tps:,.1f} tps{marks}"
        )
        log.info("%s done: %.1f tps %s", _label(cell), parsed.summary.tps, flags)
    else:
        ctx.display.note(f"[red]failed[/red] {_label(cell)}: {reason}")
        log.error("%s failed: %s", _label(cell), reason)
