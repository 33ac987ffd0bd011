"""One session of a run, open: an engine started with a tier's configuration (its live
variables checked against the intent), warmed up, and serving cells, each measured with
its telemetry and recorded, done or failed with its reason, until the session closes."""

from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from oltplab.base import metrics
from oltplab.base.errors import EngineError
from oltplab.base.stopping_rule import Stop
from oltplab.engines.config import check_variables, describe_mismatch, expected_variables
from oltplab.engines.control import format_pairs
from oltplab.engines.isolation import pin_server
from oltplab.engines.provision import begin_session, tunables
from oltplab.engines.server import EngineState
from oltplab.measure.cell_watch import Watch
from oltplab.measure.failures import failure_reason
from oltplab.measure.gates import gated
from oltplab.measure.judgement import Seen, judge
from oltplab.measure.phases import Stage
from oltplab.measure.run import Run, engine_key
from oltplab.plan import Cell, Session
from oltplab.spec import Spec, WorkloadSpec
from oltplab.store import directory as names
from oltplab.sysbench.driver import Job, SysbenchRun, client_share, execute_together
from oltplab.sysbench.output import SysbenchOutput
from oltplab.sysbench.reading import read_output
from oltplab.telemetry.collectors import Collected, queue_rows
from oltplab.telemetry.devices import CellSite
from oltplab.telemetry.load import Interference
from oltplab.workloads.kinds import kind_of, kind_results_in

log = logging.getLogger("oltplab")


class _SessionLost(Exception):
    def __init__(self, reason: str, cells: list[Cell]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.cells = cells


@dataclass(frozen=True)
class Judged:
    """What a measured cell brings to its judgement beside sysbench's output."""

    result: SysbenchRun
    collected: Collected
    stopped: Stop | None = None  # an adaptive cell's stop: the length the rule gave it
    round_load: Interference | None = None  # a sliced cell's: the load its whole round met


@dataclass(eq=False)
class OpenSession:
    """An engine started for a session; `session` is the one it was opened (and warmed up)
    for, `stem` where that session's files go (its option file, variables, error log)."""

    run: Run
    state: EngineState
    session: Session
    stem: Path

    @classmethod
    def open(cls, run: Run, session: Session, cells: list[Cell]) -> OpenSession | None:
        """The session's engine started and warmed up; None (its cells failed) if not."""
        state = run.ready(session.engine, session.host)
        if state is None:
            run.fail_cells(cells, run.broken[engine_key(session.engine, session.host)])
            return None
        reads_only = run.spec.workload(session.workload).reads_only
        stem = results_folder(run, state, session) / names.session_stem(session.tier, reads_only)
        opened = cls(run, state, session, stem)
        try:
            opened._start(session)
        except EngineError as exc:
            opened._end()
            run.unless_disk_full(exc)
            run.fail_cells(cells, str(exc))
            return None
        return opened

    def measure_cells(self, session: Session, cells: list[Cell]) -> bool:
        """The session's cells on the started engine; False when the engine was lost (the
        cells it left are failed)."""
        run = self.run
        folder = results_folder(run, self.state, session)
        reads_only = run.spec.workload(session.workload).reads_only
        try:
            for index, cell in enumerate(cells):
                before = run.measured_before.get(cell.key, 0)
                self._measure(cell, folder / names.cell_stem(cell, reads_only, before))
                if not self.state.server.alive() and index + 1 < len(cells):
                    self._recover(session, cells[index + 1 :])
        except _SessionLost as lost:
            run.fail_cells(lost.cells, lost.reason)
            return False
        return True

    def close(self) -> None:
        if self.state.server.alive():
            self._describe_warm_engine()
        self._end()

    def record(self, cell: Cell, output: Path, parsed: SysbenchOutput, judged: Judged) -> None:
        """A measured cell into the ledger, with its flags and notes, done or failed."""
        run, state, result = self.run, self.state, judged.result
        stopped = judged.stopped
        seconds = stopped.seconds if stopped is not None else run.spec.protocol.measure_seconds
        alive = state.server.alive()
        if alive:
            self._keep_status(cell, names.stem_of(output))
        sliced = run.spec.protocol.order == "sliced"
        interval = parsed.interval if sliced else run.spec.protocol.report_interval
        # The CPUs sysbench may use: all of them, or the client's share when isolated.
        cores = len(os.sched_getaffinity(0))
        succeeded = result.returncode == 0 and parsed.summary is not None and alive
        if not succeeded:
            run.ensure_space()  # a cell that failed on a full disk is measured again
        collected = judged.collected
        seen = Seen(
            seconds,
            interval,
            cell.rate,
            client_share(result.cpu_seconds, result.seconds, cell.threads, cores),
            collected.gap,
            stopped,
            judged.round_load,
            tuple(collected.notes),
            None if succeeded else failure_reason(result, parsed, state, alive),
        )
        outcome = judge(
            parsed,
            seen,
            str(output.relative_to(run.results)),
            telemetry=tuple(collected.rows + queue_rows(parsed.queue)),
            clock=dataclasses.asdict(collected.clock) if collected.clock else None,
            kind_results=kind_results_in(run.spec.workload(cell.workload), output),
        )
        run.ledger.record_result(cell, outcome)
        if parsed.summary is not None and outcome.reason is None:
            flags = outcome.flags
            marks = f" [yellow]({', '.join(flags)})[/yellow]" if flags else ""
            tps = parsed.summary.tps
            run.display.note(f"[green]done[/green] {cell.label}: {tps:,.1f} tps{marks}")
            log.info("%s done: %.1f tps %s", cell.label, tps, list(flags))
        else:
            run.display.note(f"[red]failed[/red] {cell.label}: {outcome.reason}")
            log.error("%s failed: %s", cell.label, outcome.reason)

    def _keep_status(self, cell: Cell, stem: Path) -> None:
        try:
            with self.state.server.control() as control:
                status = format_pairs(control.status())
            names.beside(stem, names.STATUS).write_text(status)
        except EngineError as exc:
            log.warning("%s: status not recorded: %s", cell.label, exc)

    def _measure(self, cell: Cell, stem: Path) -> None:
        run, protocol = self.run, self.run.spec.protocol
        output = names.output_of(stem)
        run.ensure_space("measure a cell")
        run.ledger.mark_running(cell, run.resolved.run_id)
        run.phase(Stage.CELLS, cell.label, protocol.measure_seconds)
        telemetry = run.telemetry_of(cell.engine)
        telemetry.before_cell(CellSite(stem, self.state.server))
        probe = telemetry.raw_file_of(metrics.ENGINE)
        watch = Watch.of_cell(protocol, cell, output, run.scratch("stop"), run.ledger, probe)
        workload = run.spec.workload(cell.workload)
        try:
            result = self._sysbench(
                workload, cell.threads, protocol.measure_seconds, output, cell.rate, watch
            )
        except KeyboardInterrupt:
            telemetry.abandon()
            run.ledger.requeue(failed_too=False)
            raise
        collected = telemetry.after_cell(result.seconds, result.launched)
        stopped = watch.outcome() if watch is not None else None
        self.record(cell, output, read_output(output), Judged(result, collected, stopped))

    def _sysbench(
        self,
        workload: WorkloadSpec,
        threads: int,
        seconds: int,
        output: Path,
        rate: int = 0,
        watch: Watch | None = None,
    ) -> SysbenchRun:
        """One sysbench run of the workload through the gate; its connection options exist
        only while it runs. Watched, it ends once the watch says so."""
        run, spec = self.run, self.run.spec
        options = self.state.sysbench_options()
        gate = {"stop_file": str(watch.stop_file)} if watch is not None else {}
        call = gated(
            kind_of(workload).call(spec, workload, threads), spec, seconds, gate, rate=rate
        )
        ticks = run.display.advance if watch is None else watch.beside(run.display.advance)
        with options.present():
            grace = spec.protocol.sysbench_grace_seconds
            args = call.args(run.resolved.sysbench, options.path)
            job = Job(args, output, self.state.target(), call.env)
            return execute_together([job], seconds + grace, ticks)[0]

    def _describe_warm_engine(self) -> None:
        """The session devices' snapshots, taken after the cells: taken between warm-up and
        measurement they would pause the engine there only when telemetry is on."""
        session = self.session
        label = f"{session.engine} {session.tier} {session.workload}"
        telemetry = self.run.telemetry_of(session.engine)
        if telemetry.describes_sessions:
            self.run.phase(Stage.SUMMARIES, f"{label}: telemetry of the warm engine")
        for missing in telemetry.after_session(self.state.server, self.stem):
            log.warning("%s: %s", label, missing)

    def _end(self) -> None:
        self.run.phases.enter(Stage.SETUP)
        self.state.server.stop(self.run.spec.protocol.stop_timeout_seconds)
        text = self.state.server.session_log()
        if text:
            names.beside(self.stem, names.ERRLOG).write_text(text)

    def _recover(self, session: Session, remaining: list[Cell]) -> None:
        """After the engine died: restart it on a fresh snapshot copy and warm up again."""
        server = self.state.server
        if not server.owned:
            raise _SessionLost(f"endpoint of {self.state.name} is unreachable", remaining)
        log.warning("%s died (%s); restarting", self.state.name, server.exit_description())
        server.stop(self.run.spec.protocol.stop_timeout_seconds)
        try:
            self._start(session)
        except EngineError as exc:
            raise _SessionLost(f"engine restart failed: {exc}", remaining) from None

    def _start(self, session: Session) -> None:
        run, state, stem = self.run, self.state, self.stem
        spec, server = run.spec, state.server
        label = f"{session.engine} {session.tier} {session.workload}"
        if server.owned:
            run.ensure_space("restore the datadir", server)
            run.phase(Stage.SETUP, f"{label}: restoring datadir and starting")
        cnf = begin_session(spec, state, session.tier)
        # Said once per start, so that the log shows how often a run restarted its engines.
        log.info("%s: session started", label)
        if run.resolved.split is not None and (pid := server.server_pid()) is not None:
            pin_server(pid, run.resolved.split)
        if cnf is not None:
            names.beside(stem, names.CNF).write_text(cnf)
            run.resolved.record.config(session.engine, session.tier, cnf)
        if (link := server.link(state.target())) is not None:
            run.resolved.record.link(engine_key(session.engine, session.host), link)
            log.info(
                "%s: link round trip %.3f ms, shaping %s", label, link["rtt_ms"], link["shaping"]
            )
        with server.control() as control:
            variables = control.variables()
            status = control.status()
        names.beside(stem, names.VARS).write_text(format_pairs(variables))
        names.beside(stem, names.STATUS).write_text(format_pairs(status))
        run.ledger.record_variables(session.engine, session.tier, session.workload, variables)
        _check_intent(run, state, session.tier, variables)
        self._warm_up(session, label)

    def _warm_up(self, session: Session, label: str) -> None:
        run, protocol = self.run, self.run.spec.protocol
        workload = run.spec.workload(session.workload)
        for position, (warm_up, seconds) in enumerate(
            kind_of(workload).warm_ups(run.spec, workload)
        ):
            name = names.warm_up_name(position)
            if seconds <= 0:
                continue
            run.phase(Stage.WARM_UP, f"{label}: warm-up {position + 1} ({warm_up.name})", seconds)
            output = names.warm_up_output(self.stem, name)
            watch = Watch.of_warm_up(protocol, seconds, output, run.scratch("stop"))
            result = self._sysbench(warm_up, protocol.warmup_threads, seconds, output, watch=watch)
            if result.returncode != 0:
                parsed = read_output(output)
                raise EngineError(f"{name} failed: {failure_reason(result, parsed, self.state)}")
            if watch is not None:
                log.info("%s: %s %s", label, name, watch.outcome().describe())


def results_folder(run: Run, state: EngineState, session: Session) -> Path:
    folder = names.ResultsDir(run.results).cells_folder(
        session.workload, session.network, state.artifact_dir
    )
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _check_intent(run: Run, state: EngineState, tier: str, variables: dict[str, str]) -> None:
    """The live variables against the intent: a provisioned engine that differs is an
    error; an endpoint is measured as it is, the differences told, not fixed."""
    spec = run.spec
    mismatches = check_variables(expected_variables(tunables(spec, state, tier)), variables)
    if not state.server.owned:
        _refuse_tier_changes(spec, state, tier, variables)
    if not mismatches:
        return
    first = describe_mismatch(mismatches[0])
    more = f" (and {len(mismatches) - 1} more)" if len(mismatches) > 1 else ""
    if state.server.owned:
        raise EngineError(f"engine {state.name} tier {tier}: {first}{more}")
    message = f"endpoint {state.name} differs from the intent: {first}{more}"
    log.warning(message)
    run.display.note(f"[yellow]{message}[/yellow]")


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
