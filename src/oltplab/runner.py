"""The runner: turn a spec into measured cells in the ledger, resumably.

Per engine the dataset is prepared once and snapshotted; every session (engine x tier x
workload, or one round of it) starts the engine on a fresh copy of that snapshot with the
tier's configuration, checks the live variables against the intent, warms up, and
measures each pending cell. A failed cell is stored as failed with its reason and the
matrix goes on; a killed run resumes at the cell that was in flight.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from oltplab import __version__
from oltplab.engines.config import (
    check_variables,
    describe_mismatch,
    expected_variables,
    extra_settings,
    intent_settings,
    parse_version,
    render_cnf,
    server_settings,
)
from oltplab.engines.control import format_pairs
from oltplab.engines.launcher import Layout, PrivateInstance, free_port
from oltplab.engines.supplier import Distribution, check_tarball, supply
from oltplab.errors import EngineError, OltplabError, SpecError
from oltplab.hostinfo import describe_host, memory_bytes
from oltplab.ledger import Ledger
from oltplab.plan import (
    Cell,
    Session,
    build_plan,
    cell_stem,
    cells_of,
    safe_name,
    scenario_dir,
    session_stem,
)
from oltplab.processes import spawn
from oltplab.sizes import format_size
from oltplab.spec import Spec, TarballSource, cell_definition_digest
from oltplab.sysbench import (
    Target,
    command,
    find_sysbench,
    read_output,
    redact,
    sysbench_version,
    validity_flags,
)

log = logging.getLogger("oltplab")
BENCH_USER = "sbtest"


class Display(Protocol):
    """What the runner tells the person watching; the CLI draws it with Rich."""

    def start(self, total_seconds: float) -> None: ...
    def phase(self, label: str, seconds: float) -> None: ...
    def advance(self, seconds: float) -> None: ...
    def note(self, message: str) -> None: ...
    def stop(self) -> None: ...


@dataclass
class Outcome:
    counts: dict[str, int]
    failed: list[tuple[str, str]]
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        return not self.failed and not self.interrupted


@dataclass
class EngineState:
    distribution: Distribution
    instance: PrivateInstance
    password: str
    server_version: str = ""
    artifact_dir: str = ""


@dataclass
class SysbenchRun:
    returncode: int | None
    timed_out: bool
    seconds: float


@dataclass
class _Context:
    spec: Spec
    results: Path
    ledger: Ledger
    display: Display
    run_id: int
    sysbench: str
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
    return find_sysbench()


def check_compatible(stored: dict[str, str], planned: dict[str, str], results: Path) -> None:
    """A results directory only accepts the spec it was made with, or one that adds cells."""
    for key, definition in stored.items():
        if key not in planned:
            raise OltplabError(
                f"{results}: holds results for cell {key.replace('|', ' ')} that this spec no "
                "longer has; use a new --results directory (a spec may only add cells)"
            )
        if planned[key] != definition:
            raise OltplabError(
                f"{results}: cell {key.replace('|', ' ')} was measured with a different engine, "
                "config, dataset, workload or protocol; use a new --results directory"
            )


# --- running sysbench -------------------------------------------------------------------------


def execute(
    args: list[str], output: Path, timeout: float, on_tick: Callable[[float], None]
) -> SysbenchRun:
    """Run sysbench with its output streamed to a file, so a killed run keeps what it printed."""
    log.info("sysbench: %s", redact(args))
    output.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with output.open("wb") as sink:
        process = spawn(args, stdout=sink)
        try:
            while process.poll() is None:
                elapsed = time.monotonic() - started
                if elapsed > timeout:
                    process.kill()
                    process.wait()
                    return SysbenchRun(None, True, elapsed)
                on_tick(elapsed)
                time.sleep(0.2)
        except BaseException:
            process.kill()
            process.wait()
            raise
    return SysbenchRun(process.returncode, False, time.monotonic() - started)


# --- the run ---------------------------------------------------------------------------------


def plan_seconds(spec: Spec, sessions: list[Session], pending: set[str]) -> float:
    total = 0.0
    for session in sessions:
        todo = [c for c in session.cells if c.key in pending]
        if not todo:
            continue
        workload = spec.workload(session.workload)
        total += spec.protocol.warmup_ro_seconds
        if not workload.read_only:
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
) -> Outcome:
    sysbench_binary = preflight(spec, origin)
    results = results.resolve()
    sessions = build_plan(spec)
    planned = {
        cell.key: cell_definition_digest(spec, cell.engine, cell.tier, cell.workload)
        for cell in cells_of(sessions)
    }
    ledger = Ledger.open(results)
    try:
        check_compatible(ledger.definitions(), planned, results)
        ledger.register((cell, planned[cell.key]) for cell in cells_of(sessions))
        requeued = ledger.requeue(failed_too=retry_failed)
        ledger.set_meta("spec", spec_text)
        ledger.set_meta("spec_digest", spec.digest())
        _log_to(results)
        if requeued:
            log.info("%d cell(s) from an earlier run go back to pending", requeued)
        provenance = {
            "oltplab": __version__,
            "sysbench": sysbench_version(sysbench_binary),
            "command": " ".join(sys.argv),
            "spec_origin": origin,
            "host": describe_host(),
        }
        run_id = ledger.begin_run(spec.digest(), provenance)
        context = _Context(spec, results, ledger, display, run_id, sysbench_binary)
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


def _run_sessions(ctx: _Context, sessions: list[Session]) -> Outcome:
    status = ctx.ledger.status_of()
    pending = {key for key, state in status.items() if state == "pending"}
    todo = [s for s in sessions if any(c.key in pending for c in s.cells)]
    ctx.display.start(plan_seconds(ctx.spec, todo, pending))
    interrupted = False
    try:
        for session in todo:
            _run_session(ctx, session, [c for c in session.cells if c.key in pending])
    except KeyboardInterrupt:
        interrupted = True
        log.warning("interrupted; the cell in flight will run again on resume")
    finally:
        for instance in ctx.instances:
            instance.stop(ctx.spec.protocol.stop_timeout_seconds)
        ctx.display.stop()
    counts = ctx.ledger.counts()
    failed = [
        (row["key"], row["reason"] or "") for row in ctx.ledger.cells() if row["status"] == "failed"
    ]
    ctx.ledger.finish_run(
        ctx.run_id, "interrupted" if interrupted else ("failed" if failed else "done")
    )
    return Outcome(counts, failed, interrupted)


# --- engines and datasets --------------------------------------------------------------------


def _secret(layout: Layout) -> str:
    path = layout.work / "secret"
    if path.is_file():
        return path.read_text().strip()
    layout.work.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(18)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(password)
    return password


def _write_cnf(ctx: _Context, state: EngineState, tier: str, port: int) -> str:
    dist = state.distribution
    engine = ctx.spec.engine(dist.engine)
    intent = ctx.spec.resolve(ctx.spec.tier(tier))
    tunables = intent_settings(dist.family, dist.version, intent) + extra_settings(engine.extra)
    server = server_settings(dist.family, dist.version, state.instance.layout.paths(dist, port))
    text = render_cnf(dist.engine, tier, server, tunables)
    state.instance.layout.cnf.write_text(text)
    return text


def _expected(ctx: _Context, state: EngineState, tier: str) -> dict[str, str]:
    dist = state.distribution
    intent = ctx.spec.resolve(ctx.spec.tier(tier))
    engine = ctx.spec.engine(dist.engine)
    return expected_variables(
        intent_settings(dist.family, dist.version, intent) + extra_settings(engine.extra)
    )


def _target(state: EngineState) -> Target:
    return Target("127.0.0.1", state.instance.port, BENCH_USER, state.password)


def _engine(ctx: _Context, name: str) -> EngineState:
    """The engine ready to serve sessions: binaries supplied, dataset snapshot taken."""
    if name in ctx.engines:
        return ctx.engines[name]
    ctx.display.phase(f"{name}: fetching binaries", 0)
    distribution = supply(ctx.spec.engine(name))
    layout = Layout(ctx.results / ".work" / safe_name(name))
    state = EngineState(distribution, PrivateInstance(distribution, layout), _secret(layout))
    ctx.instances.append(state.instance)
    state.instance.prepare_folders()
    marker = layout.work / "snapshot.json"
    dataset = json.dumps(ctx.spec.dataset.model_dump(), sort_keys=True)
    known = json.loads(marker.read_text()) if marker.is_file() else {}
    if known.get("dataset") == dataset and layout.snapshot.is_dir():
        state.server_version = known["server_version"]
    else:
        _prepare_dataset(ctx, state)
        marker.write_text(json.dumps({"dataset": dataset, "server_version": state.server_version}))
    state.artifact_dir = _artifact_dir(ctx, state)
    ctx.ledger.record_engine(
        name,
        family=distribution.family,
        version=distribution.version,
        server_version=state.server_version,
        source=distribution.source,
        binary_sha256=distribution.binary_sha256,
        artifact_dir=state.artifact_dir,
    )
    ctx.engines[name] = state
    return state


def _artifact_dir(ctx: _Context, state: EngineState) -> str:
    """`<family>/<SELECT VERSION()>`, made unique if two engines report the same version."""
    dist = state.distribution
    wanted = f"{dist.family}/{safe_name(state.server_version)}"
    taken = {row["artifact_dir"] for n, row in ctx.ledger.engines().items() if n != dist.engine}
    return wanted if wanted not in taken else f"{wanted}-{safe_name(dist.engine)}"


def _prepare_dataset(ctx: _Context, state: EngineState) -> None:
    spec, instance, dist = ctx.spec, state.instance, state.distribution
    first_tier = spec.tier_list[0].name
    timeout = spec.protocol.start_timeout_seconds
    ctx.display.phase(f"{dist.engine}: initialising datadir", 0)
    port = free_port()
    _write_cnf(ctx, state, first_tier, port)
    instance.initialise(timeout)
    instance.start(port, timeout)
    with instance.control() as control:
        control.create_benchmark_user(
            BENCH_USER,
            state.password,
            native_password=dist.family != "mariadb" and parse_version(dist.version) >= (8, 0),
        )
        state.server_version = control.version()
    ctx.display.phase(
        f"{dist.engine}: sysbench prepare ({spec.dataset.tables} x {spec.dataset.table_size:,})", 0
    )
    prepare_log = instance.layout.work / "prepare.sysbench.txt"
    args = command(
        ctx.sysbench,
        "oltp_read_write",
        "prepare",
        _target(state),
        tables=spec.dataset.tables,
        table_size=spec.dataset.table_size,
        threads=max(1, min(spec.dataset.tables, os.cpu_count() or 1)),
    )
    result = execute(args, prepare_log, timeout=float("inf"), on_tick=lambda _: None)
    if result.returncode != 0:
        detail = " | ".join(prepare_log.read_text(errors="replace").strip().splitlines()[-3:])
        instance.stop(spec.protocol.stop_timeout_seconds)
        raise EngineError(f"engine {dist.engine}: sysbench prepare failed: {detail}")
    if not instance.stop(spec.protocol.stop_timeout_seconds):
        raise EngineError(f"engine {dist.engine}: no clean shutdown after prepare; not snapshotted")
    instance.take_snapshot()
    log.info("%s: dataset prepared and snapshotted (%s)", dist.engine, state.server_version)


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
    if session.engine in ctx.broken:
        _fail(ctx, cells, ctx.broken[session.engine])
        return
    try:
        state = _engine(ctx, session.engine)
    except EngineError as exc:
        ctx.broken[session.engine] = str(exc)
        _fail(ctx, cells, str(exc))
        return
    workload = ctx.spec.workload(session.workload)
    folder = ctx.results / scenario_dir(workload.name) / state.artifact_dir
    folder.mkdir(parents=True, exist_ok=True)
    stem = session_stem(session.tier, workload.read_only)
    instance = state.instance
    try:
        _start_session(ctx, state, session, folder / stem)
    except EngineError as exc:
        _save_error_log(instance, folder / f"{stem}.errlog.txt")
        instance.stop(ctx.spec.protocol.stop_timeout_seconds)
        _fail(ctx, cells, str(exc))
        return
    try:
        for cell in cells:
            _measure(ctx, state, cell, folder / cell_stem(cell, workload.read_only))
            if not instance.alive():
                _recover(ctx, state, session, folder / stem, cells[cells.index(cell) + 1 :])
    except _SessionLost as lost:
        _fail(ctx, lost.cells, lost.reason)
    finally:
        instance.stop(ctx.spec.protocol.stop_timeout_seconds)
        _save_error_log(instance, folder / f"{stem}.errlog.txt")


class _SessionLost(Exception):
    def __init__(self, reason: str, cells: list[Cell]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.cells = cells


def _recover(
    ctx: _Context, state: EngineState, session: Session, stem: Path, remaining: list[Cell]
) -> None:
    """After the engine died: restart it on a fresh snapshot copy and warm up again."""
    if not remaining:
        return
    log.warning(
        "%s died (%s); restarting", state.distribution.engine, state.instance.exit_description()
    )
    state.instance.stop(ctx.spec.protocol.stop_timeout_seconds)
    try:
        _start_session(ctx, state, session, stem)
    except EngineError as exc:
        raise _SessionLost(f"engine restart failed: {exc}", remaining) from None


def _start_session(ctx: _Context, state: EngineState, session: Session, stem: Path) -> None:
    spec, instance = ctx.spec, state.instance
    label = f"{session.engine} {session.tier} {session.workload}"
    ctx.display.phase(f"{label}: restoring datadir and starting", 0)
    instance.restore()
    port = free_port()
    cnf = _write_cnf(ctx, state, session.tier, port)
    stem.with_name(stem.name + ".cnf.txt").write_text(cnf)
    instance.start(port, spec.protocol.start_timeout_seconds)
    with instance.control() as control:
        variables = control.variables()
    stem.with_name(stem.name + ".vars.txt").write_text(format_pairs(variables))
    ctx.ledger.record_variables(session.engine, session.tier, session.workload, variables)
    mismatches = check_variables(_expected(ctx, state, session.tier), variables)
    if mismatches:
        more = f" (and {len(mismatches) - 1} more)" if len(mismatches) > 1 else ""
        raise EngineError(
            f"engine {session.engine} tier {session.tier}: {describe_mismatch(mismatches[0])}{more}"
        )
    workload = spec.workload(session.workload)
    phases = [("warmupA", "oltp_read_only", spec.protocol.warmup_ro_seconds)]
    if not workload.read_only:
        phases.append(("warmupB", "oltp_read_write", spec.protocol.warmup_rw_seconds))
    for name, test, seconds in phases:
        if seconds <= 0:
            continue
        ctx.display.phase(f"{label}: {name}", seconds)
        output = stem.with_name(f"{stem.name}_{name}.sysbench.txt")
        args = _run_args(ctx, state, test, spec.protocol.warmup_threads, seconds)
        result = execute(
            args, output, seconds + spec.protocol.sysbench_grace_seconds, ctx.display.advance
        )
        if result.returncode != 0:
            parsed = read_output(output)
            raise EngineError(f"{name} failed: {_failure_reason(result, parsed.fatal, state)}")


def _run_args(
    ctx: _Context, state: EngineState, test: str, threads: int, seconds: int
) -> list[str]:
    spec = ctx.spec
    options = spec.workload(test).options if test in {w.name for w in spec.workloads} else {}
    return command(
        ctx.sysbench,
        test,
        "run",
        _target(state),
        tables=spec.dataset.tables,
        table_size=spec.dataset.table_size,
        threads=threads,
        seconds=seconds,
        report_interval=spec.protocol.report_interval,
        rand_type=spec.dataset.rand_type,
        options=options,
    )


def _failure_reason(result: SysbenchRun, fatal: tuple[str, ...], state: EngineState) -> str:
    parts = []
    if not state.instance.alive():
        parts.append(f"engine process {state.instance.exit_description()} during the cell")
    if result.timed_out:
        parts.append(f"sysbench did not finish within {result.seconds:.0f} s and was killed")
    elif result.returncode not in (0, None):
        parts.append(f"sysbench exited with code {result.returncode}")
    if fatal:
        parts.append(f"sysbench said: {fatal[0][:300]}")
    log_tail = state.instance.session_log_tail(3)
    if log_tail and not state.instance.alive():
        parts.append(f"error log: {log_tail[-600:]}")
    return "; ".join(parts) or "sysbench printed no summary"


def _measure(ctx: _Context, state: EngineState, cell: Cell, stem: Path) -> None:
    spec = ctx.spec
    seconds = spec.protocol.measure_seconds
    output = stem.with_name(stem.name + ".sysbench.txt")
    artifact = str(output.relative_to(ctx.results))
    ctx.ledger.mark_running(cell, ctx.run_id)
    ctx.display.phase(_label(cell), seconds)
    args = _run_args(ctx, state, cell.workload, cell.threads, seconds)
    try:
        result = execute(
            args, output, seconds + spec.protocol.sysbench_grace_seconds, ctx.display.advance
        )
    except KeyboardInterrupt:
        ctx.ledger.requeue(failed_too=False)
        raise
    parsed = read_output(output)
    if state.instance.alive():
        try:
            with state.instance.control() as control:
                stem.with_name(stem.name + ".status.txt").write_text(format_pairs(control.status()))
        except EngineError as exc:
            log.warning("%s: status not recorded: %s", _label(cell), exc)
    if result.returncode == 0 and parsed.summary is not None and state.instance.alive():
        flags = validity_flags(parsed, seconds, spec.protocol.report_interval)
        ctx.ledger.record_done(cell, parsed.summary, parsed.intervals, flags, artifact)
        marks = f" [yellow]({', '.join(flags)})[/yellow]" if flags else ""
        ctx.display.note(
            f"[green]done[/green] {_label(cell)}: {parsed.summary.tps:,.1f} tps{marks}"
        )
        log.info("%s done: %.1f tps %s", _label(cell), parsed.summary.tps, flags)
    else:
        reason = _failure_reason(result, parsed.fatal, state)
        ctx.ledger.record_failed(cell, reason, artifact)
        ctx.display.note(f"[red]failed[/red] {_label(cell)}: {reason}")
        log.error("%s failed: %s", _label(cell), reason)


def _save_error_log(instance: PrivateInstance, target: Path) -> None:
    text = instance.session_log()
    if text:
        target.write_text(text)
