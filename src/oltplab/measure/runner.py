"""The runner: turn a spec into measured cells in the ledger, resumably.

Per engine the dataset is prepared once and snapshotted; every session (engine x tier x
workload, or one round of it) starts the engine on a fresh copy of that snapshot with the
tier's configuration, checks the live variables against the intent, warms up, and
measures each pending cell. A failed cell is stored as failed with its reason and the
matrix goes on; a killed run resumes at the cell that was in flight.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

from oltplab import __version__
from oltplab.base.errors import DiskFull, EngineError, OltplabError
from oltplab.engines.isolation import PAGE_CACHE_EVICTION, CpuSplit, check_host, pin_client
from oltplab.engines.provision import sysbench_prepare
from oltplab.engines.snapshots import SnapshotStore
from oltplab.measure.phases import Phases, Stage
from oltplab.measure.preflight import preflight
from oltplab.measure.request import Display, RunRequest
from oltplab.measure.session import RunContext, run_alternating, run_session, set_up_engines
from oltplab.measure.sliced import run_sliced
from oltplab.measure.workloads import cell_definitions, workload_facts
from oltplab.plan import (
    Cell,
    Session,
    again,
    build_plan,
    cells_of,
    extra_round,
    needing_more,
    plan_seconds,
)
from oltplab.plan.blocks import Shard, shard_sessions
from oltplab.plan.preparing import preparing_ahead
from oltplab.spec import LOCAL_HOST, Spec
from oltplab.store.directory import ResultsDir
from oltplab.store.files import os_problem
from oltplab.store.ledger import Ledger
from oltplab.store.lock import ResultsLock, refuse_a_file
from oltplab.store.provenance import RunRecord, sysbench_facts
from oltplab.store.rows import CellRow
from oltplab.store.scratch import scratch_root, snapshot_store
from oltplab.store.status import RunStatus, Status
from oltplab.sysbench.driver import sysbench_version
from oltplab.sysbench.validity import INTERFERENCE
from oltplab.telemetry.devices import Telemetry
from oltplab.telemetry.registry import default_names, devices
from oltplab.telemetry.summaries import host_summary

log = logging.getLogger("oltplab")
# How often a disturbed cell is measured again before its last result stands, flagged.
MAX_RERUNS = 2


@dataclass
class Outcome:
    counts: dict[str, int]
    failed: list[CellRow]
    interrupted: bool = False


def check_compatible(
    stored: dict[Cell, str], planned: dict[Cell, str], results: Path, *, others: bool = False
) -> None:
    """A results directory only accepts the spec it was made with, or one that adds cells
    (or, with `others`, one that measures some of its cells and others: a capacity search
    adds a rate at a time).

    Cells are compared by group (the cell without its repetition), so repetitions beyond
    the spec's, which adaptive runs add, belong to their group.
    """
    groups = {cell.group: definition for cell, definition in planned.items()}
    for cell, definition in stored.items():
        group = cell.group
        if group not in groups and others:
            continue
        if group not in groups:
            raise OltplabError(
                f"{results}: holds results for cell {group.describe()} that this spec no "
                "longer has; use a new --results directory (a spec may only add cells)"
            )
        if groups[group] != definition:
            raise OltplabError(
                f"{results}: cell {group.describe()} was measured with a different "
                "engine, config, dataset, workload or protocol; use a new --results directory"
            )


# --- the run ---------------------------------------------------------------------------------


def run(request: RunRequest, display: Display) -> Outcome:
    """The spec's matrix (or shard K of N of it) measured into the request's results."""
    spec, origin, shard = request.spec, request.origin, request.shard
    chosen = default_names() if request.telemetry is None else request.telemetry
    results = request.results.resolve()
    # What is wrong with the command line is said before what the spec asks of the host.
    refuse_a_file(results)
    sessions = build_plan(spec) if shard is None else shard_sessions(spec, shard)
    measured = {cell.engine for cell in cells_of(sessions)}
    phases = Phases()
    phases.enter(Stage.SETUP)  # the binaries are fetched here
    sysbench_binary = preflight(spec, origin, scratch_root(results), measured, display.note)
    planned = cell_definitions(spec, cells_of(sessions))
    phases.enter(Stage.OTHER)
    with ResultsLock(results):
        ledger = Ledger.open(results)
        try:
            check_compatible(ledger.definitions(), planned, results, others=request.others)
            # We hold the lock: a run the ledger still calls running was killed.
            ledger.end_stale_runs()
            ledger.register((cell, planned[cell]) for cell in cells_of(sessions))
            requeued = ledger.requeue(failed_too=request.retry_failed)
            ledger.set_meta("spec", request.spec_text)
            ledger.set_meta("spec_digest", spec.digest())
            if shard is not None:
                _claim_shard(ledger, results, spec, shard)
            handler = log_to(results)
            if requeued:
                log.info("%d cell(s) from an earlier run go back to pending", requeued)
            sysbench = sysbench_version(sysbench_binary)
            host, advised = check_host()
            host["advice"] = advised
            if host["instructions_counter"] != "readable":
                log.info(
                    "instructions per transaction not measured: perf stat -e instructions: %s",
                    host["instructions_counter"],
                )
            for line in advised:
                log.warning("host: %s", line)
                display.note(f"[yellow]host: {line}[/yellow]")
            split = _isolation(spec, display)
            isolated = "page cache only" if spec.protocol.isolation else "off"
            host["isolation"] = split.describe() if split else isolated
            host |= {"page_cache": PAGE_CACHE_EVICTION} if spec.protocol.isolation else {}
            provenance = {
                "machine": host["machine"],
                "shard": str(shard) if shard is not None else None,
                "oltplab": __version__,
                "sysbench": sysbench,
                "command": " ".join(sys.argv),
                "spec_origin": origin,
                "host": host,
            }
            if chosen:
                phases.enter(Stage.SUMMARIES)
                summary = host_summary(results)
                phases.enter(Stage.OTHER)
                said = summary.describe(datetime.now(UTC))
                log.log(logging.INFO if summary.taken_at else logging.WARNING, "%s", said)
                display.note(said if summary.taken_at else f"[yellow]{said}[/yellow]")
                if summary.taken_at is not None:
                    host["summary_taken_at"] = summary.taken_at.isoformat(timespec="seconds")
            run_id = ledger.begin_run(spec.digest(), provenance)
            record = RunRecord.begin(
                results,
                spec_text=request.spec_text,
                spec_origin=origin,
                spec_base=request.spec_base or Path.cwd(),
                spec_digest=spec.digest(),
                command=str(provenance["command"]),
                sysbench=sysbench_facts(sysbench_binary, sysbench),
                workloads=workload_facts(spec),
                telemetry=list(chosen),
                rerun_of=request.rerun_of,
                host=host,
            )
            context = RunContext(
                spec,
                results,
                ledger,
                display,
                run_id,
                sysbench_binary,
                request.prepare_endpoints,
                request.cleanup_endpoints,
                {cell: planned[cell] for cell in cells_of(sessions)},
                request.until_cv,
                request.max_repetitions,
                Telemetry(devices(chosen)),
                record,
                SnapshotStore(store) if (store := snapshot_store(request.snapshots)) else None,
                rerun_disturbed=request.rerun_disturbed,
                split=split,
                shard=shard.index if shard is not None else None,
                measured_before={key: len(rows) for key, rows in ledger.superseded().items()},
                phases=phases,
            )
            had = pin_client(split) if split is not None else None
            try:
                return _run_sessions(context, sessions)
            finally:
                if had is not None:
                    os.sched_setaffinity(0, had)
                log.info("%s", phases.line())
                log.removeHandler(handler)
                handler.close()
        finally:
            ledger.close()


def _isolation(spec: Spec, display: Display) -> CpuSplit | None:
    """The CPU split isolation asks for, when every engine runs here and there is more
    than one CPU to split."""
    if not spec.protocol.isolation:
        return None
    split = CpuSplit.of(os.sched_getaffinity(0))
    remote = [p.server for p in spec.placements if p.server != LOCAL_HOST]
    if split is None or remote:
        why = "one CPU" if split is None else f"engines run on {', '.join(remote)}"
        display.note(f"[yellow]isolation: no CPU split ({why}); datadir pages still evicted[/]")
        return None
    log.info("isolation: %s", split.describe())
    return split


def _claim_shard(ledger: Ledger, results: Path, spec: Spec, shard: Shard) -> None:
    """A shard's directory holds one shard of one spec, cut one way, for good."""
    said = {"shard": str(shard), "block": ",".join(spec.distribute.block)}
    for key, value in said.items():
        stored = ledger.meta(key)
        if stored is not None and stored != value:
            raise OltplabError(
                f"{results}: holds {key} {stored}, not {value}; use the --shard and spec it was "
                "made with, or a new --results directory"
            )
        ledger.set_meta(key, value)


def log_to(results: Path) -> logging.Handler:
    """oltplab's log written to the results' oltplab.log too, until the handler is removed."""
    handler = logging.FileHandler(ResultsDir(results).log)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    return handler


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _run_sessions(ctx: RunContext, sessions: list[Session]) -> Outcome:
    # A SIGTERM (a scheduler's or CI's timeout) stops as cleanly as Ctrl-C does.
    signal.signal(signal.SIGTERM, _interrupt)
    status = ctx.ledger.status_of()
    pending = {key for key, state in status.items() if state == Status.PENDING}
    todo = [s for s in sessions if any(c.key in pending for c in s.cells)]
    ctx.display.start(plan_seconds(ctx.spec, todo, pending))
    interrupted = False
    try:
        if ctx.shard is not None and ctx.snapshots is not None:
            set_up_engines(ctx, preparing_ahead(ctx.spec, todo, ctx.shard))
        _measure(ctx, todo, lambda cell: cell.key in pending)
        if ctx.until_cv is not None:
            _adaptive_rounds(ctx, sessions)
        if ctx.rerun_disturbed:
            _rerun_disturbed(ctx, sessions)
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
            ctx.ledger.finish_run(ctx.run_id, RunStatus.DISK_FULL)
        raise full from None
    finally:
        if ctx.cleanup_endpoints and not interrupted:
            _cleanup_endpoints(ctx)
        ctx.phases.enter(Stage.SETUP)
        for instance in ctx.instances:
            instance.stop(ctx.spec.protocol.stop_timeout_seconds)
            # Sessions always start from the snapshot, so the last datadir is only disk used.
            instance.discard_datadir()
        ctx.display.stop()
        ctx.phases.enter(Stage.OTHER)
    counts = ctx.ledger.counts()
    failed = [row for row in ctx.ledger.cells() if row.status == Status.FAILED]
    ctx.ledger.finish_run(
        ctx.run_id,
        RunStatus.INTERRUPTED if interrupted else (RunStatus.FAILED if failed else RunStatus.DONE),
    )
    return Outcome(counts, failed, interrupted)


def _measure(
    ctx: RunContext, sessions: list[Session], wanted: Callable[[Cell], bool] = lambda _: True
) -> None:
    """The wanted cells of the sessions: a session at a time, alternating, or sliced."""
    cells = {s: [c for c in s.cells if wanted(c)] for s in sessions}
    if ctx.spec.protocol.order == "alternating":
        run_alternating(ctx, sessions, cells)
        return
    if ctx.spec.protocol.order == "sliced":
        run_sliced(ctx, sessions, cells)
        return
    for session in sessions:
        if cells[session]:
            run_session(ctx, session, cells[session])


def _cleanup_endpoints(ctx: RunContext) -> None:
    for key, state in ctx.engines.items():
        if state.server.owned:
            continue
        ctx.phase(Stage.SETUP, f"{key}: sysbench cleanup on the endpoint")
        try:
            sysbench_prepare(
                ctx.spec,
                ctx.sysbench,
                state,
                ctx.scratch(key),
                "cleanup",
            )
            log.info("%s: sbtest tables dropped (--cleanup)", key)
        except EngineError as exc:
            log.error("%s", exc)
            ctx.display.note(f"[red]{exc}[/red]")


def _adaptive_rounds(ctx: RunContext, sessions: list[Session]) -> None:
    """Repeat cell groups whose TPS still varies more than --until-cv, round by round."""
    assert ctx.until_cv is not None
    template = [s for s in sessions if all(c.repetition == 1 for c in s.cells)] or sessions
    definitions = {c.group: d for c, d in ctx.definitions.items()}
    while True:
        tps: dict[Cell, list[float]] = {}
        reps: dict[Cell, int] = {}
        for row in ctx.ledger.cells():
            group = row.cell.group
            reps[group] = max(reps.get(group, 0), row.repetition)
            if row.status == Status.DONE and row.tps is not None:
                tps.setdefault(group, []).append(row.tps)
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
        _measure(ctx, round_)


def _rerun_disturbed(ctx: RunContext, sessions: list[Session]) -> None:
    """Measure again each cell other load disturbed (flag interference), with the cells of
    its round when the engines were interleaved (so a comparison stays paired within a
    round); each earlier result is kept aside in the ledger. At most MAX_RERUNS times a
    cell: a host that is never quiet is told, not waited out."""
    template = [s for s in sessions if all(c.repetition == 1 for c in s.cells)] or sessions
    paired = ctx.spec.protocol.order != "as-listed"
    for _ in range(MAX_RERUNS):
        rows = ctx.ledger.cells()
        disturbed = [
            row.cell
            for row in rows
            if row.status == Status.DONE
            and INTERFERENCE in row.flags
            and ctx.measured_before.get(row.key, 0) < MAX_RERUNS
        ]
        if not disturbed:
            return
        # A round: the cells of one repetition of a group, whatever their engine.
        rounds = {replace(c, engine="") for c in disturbed}
        done = [row.cell for row in rows if row.status == Status.DONE]
        again_cells = {
            c for c in done if c in disturbed or (paired and replace(c, engine="") in rounds)
        }
        log.info("%d cell(s) disturbed by other load: measured again", len(disturbed))
        for cell in sorted(again_cells, key=lambda c: c.key):
            ctx.ledger.supersede(cell, "interference" if cell in disturbed else "round-mate")
            ctx.measured_before[cell.key] = ctx.measured_before.get(cell.key, 0) + 1
        round_ = again(template, again_cells)
        ctx.display.extend(plan_seconds(ctx.spec, round_, {c.key for c in again_cells}))
        _measure(ctx, round_)
