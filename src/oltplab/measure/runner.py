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
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

from oltplab import __version__
from oltplab.base.errors import DiskFull, EngineError, OltplabError
from oltplab.engines.isolation import PAGE_CACHE_EVICTION, CpuSplit, check_host, pin_client
from oltplab.engines.provision import sysbench_prepare
from oltplab.engines.snapshots import SnapshotStore

# The built-in orders beyond ordering.py's, registered as they are imported.
from oltplab.measure import sliced as _sliced  # noqa: F401
from oltplab.measure.gates import cell_definitions, workload_facts
from oltplab.measure.ordering import order_of
from oltplab.measure.phases import Phases, Stage
from oltplab.measure.preflight import Asked, preflight
from oltplab.measure.request import Display, RunRequest
from oltplab.measure.rounds import Planned, RoundPolicy, asked_for, measure_rounds
from oltplab.measure.run import Resolved, Round, Run
from oltplab.plan import Cell, Session, build_plan, cells_of, plan_seconds
from oltplab.plan.blocks import Shard, shard_sessions
from oltplab.plan.preparing import preparing_ahead
from oltplab.spec import LOCAL_HOST, Spec
from oltplab.store.directory import ResultsDir
from oltplab.store.files import os_problem
from oltplab.store.ledger import Ledger
from oltplab.store.lock import ResultsLock, refuse_a_file
from oltplab.store.provenance import RunFacts, RunRecord, sysbench_facts
from oltplab.store.rows import CellRow
from oltplab.store.scratch import scratch_root, snapshot_store
from oltplab.store.status import RunStatus, Status
from oltplab.sysbench.driver import find_sysbench, sysbench_version
from oltplab.telemetry.devices import Telemetry
from oltplab.telemetry.registry import default_names, devices
from oltplab.telemetry.summaries import host_summary

log = logging.getLogger("oltplab")


@dataclass
class RunOutcome:
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


def run(request: RunRequest, display: Display, policies: Sequence[RoundPolicy] = ()) -> RunOutcome:
    """The spec's matrix (or shard K of N of it) measured into the request's results, then
    more rounds while the request's round policies, or the `policies` given, want them."""
    spec, origin, shard = request.spec, request.origin, request.shard
    chosen = default_names() if request.telemetry is None else request.telemetry
    results = request.results.resolve()
    # What is wrong with the command line is said before what the spec asks of the host.
    refuse_a_file(results)
    sessions = build_plan(spec) if shard is None else shard_sessions(spec, shard)
    measured = {cell.engine for cell in cells_of(sessions)}
    phases = Phases()
    phases.enter(Stage.SETUP)  # the binaries are fetched here
    sysbench_binary = find_sysbench()
    work = scratch_root(results)
    preflight(Asked(spec, origin, work, frozenset(measured), sysbench_binary, display.note))
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
            facts = RunFacts(
                request.spec_text,
                origin,
                request.spec_base or Path.cwd(),
                spec.digest(),
                str(provenance["command"]),
                sysbench_facts(sysbench_binary, sysbench),
                workload_facts(spec),
                list(chosen),
                request.rerun_of,
                host,
            )
            record = RunRecord.begin(results, facts)
            resolved = Resolved(
                results,
                sysbench_binary,
                run_id,
                {cell: planned[cell] for cell in cells_of(sessions)},
                Telemetry(devices(chosen)),
                record,
                SnapshotStore(store) if (store := snapshot_store(request.snapshots)) else None,
                split,
            )
            measured_before = {key: len(rows) for key, rows in ledger.superseded().items()}
            opened = Run(request, resolved, ledger, display, phases, measured_before)
            had = pin_client(split) if split is not None else None
            try:
                return _run_sessions(opened, sessions, list(policies))
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


def _run_sessions(run: Run, sessions: list[Session], extra: list[RoundPolicy]) -> RunOutcome:
    # A SIGTERM (a scheduler's or CI's timeout) stops as cleanly as Ctrl-C does.
    signal.signal(signal.SIGTERM, _interrupt)
    ledger, request = run.ledger, run.request
    status = ledger.status_of()
    pending = {key for key, state in status.items() if state == Status.PENDING}
    todo = [s for s in sessions if any(c.key in pending for c in s.cells)]
    run.display.start(plan_seconds(run.spec, todo, pending))
    planned = Round(todo, {s: [c for c in s.cells if c.key in pending] for s in todo})
    policies = [Planned(planned), *asked_for(request, sessions), *extra]
    order = order_of(run)
    interrupted = False
    try:
        if request.shard is not None and run.resolved.snapshots is not None:
            for name, host in preparing_ahead(run.spec, todo, request.shard.index):
                run.ready(name, host)
        try:
            measure_rounds(run, order, policies)
        finally:
            order.close()
    except KeyboardInterrupt:
        interrupted = True
        log.warning("interrupted; the cell in flight will run again on resume")
    except (DiskFull, OSError) as stopped:
        if isinstance(stopped, OSError) and stopped.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        # Told now, before the clean-up below frees the datadir's space.
        full = stopped if isinstance(stopped, DiskFull) else os_problem(stopped, run.results)
        # The cell in flight stays running in the ledger and goes back to pending on resume.
        log.error("stopped: %s", full)
        with contextlib.suppress(OltplabError):
            ledger.finish_run(run.resolved.run_id, RunStatus.DISK_FULL)
        raise full from None
    finally:
        if request.cleanup_endpoints and not interrupted:
            _cleanup_endpoints(run)
        run.phases.enter(Stage.SETUP)
        for instance in run.instances:
            instance.stop(run.spec.protocol.stop_timeout_seconds)
            # Sessions always start from the snapshot, so the last datadir is only disk used.
            instance.discard_datadir()
        run.display.stop()
        run.phases.enter(Stage.OTHER)
    counts = ledger.counts()
    failed = [row for row in ledger.cells() if row.status == Status.FAILED]
    ledger.finish_run(
        run.resolved.run_id,
        RunStatus.INTERRUPTED if interrupted else (RunStatus.FAILED if failed else RunStatus.DONE),
    )
    return RunOutcome(counts, failed, interrupted)


def _cleanup_endpoints(run: Run) -> None:
    for key, state in run.engines.items():
        if state.server.owned:
            continue
        run.phase(Stage.SETUP, f"{key}: sysbench cleanup on the endpoint")
        try:
            sysbench_prepare(run.spec, run.resolved.sysbench, state, run.scratch(key), "cleanup")
            log.info("%s: sbtest tables dropped (--cleanup)", key)
        except EngineError as exc:
            log.error("%s", exc)
            run.display.note(f"[red]{exc}[/red]")
