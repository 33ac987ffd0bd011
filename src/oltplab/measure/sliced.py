"""Sliced rounds: the cells of a round run at the same time, each sysbench process in its
own time slots (`slice_seconds` each, in turn; measure/gates/sliced.lua holds each
process back outside its slots), so that every cell of a round meets the host in the same
seconds. On this 2-core VM the speed of a one-thread cell drifts over tens of seconds and
now and then jumps for a second or two; cells run back to back see different parts of
that drift, slices of the same seconds see it alike (bench/precision.py has the figures).

Each engine starts once per tier and stays running, as when alternating. A cell's figures
come from its own slices only: its per-second samples are its slices, its server CPU the
server's CPU time read at the start and end of each slice (local engines), and its
latency is not known (sysbench's own clock counts the waits between slots)."""

from __future__ import annotations

import math
import os
import time
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path, PurePath

from oltplab.base import metrics
from oltplab.engines.server import EngineState
from oltplab.measure.gates import gated
from oltplab.measure.ordering import Running, register, tier_groups
from oltplab.measure.phases import Stage
from oltplab.measure.run import Round, Run
from oltplab.measure.session import Judged, OpenSession, results_folder
from oltplab.plan import Cell, Session
from oltplab.store.directory import beside, cell_stem, output_of, stem_of
from oltplab.store.recording import now
from oltplab.sysbench.driver import Job, execute_together
from oltplab.sysbench.output import SysbenchOutput
from oltplab.sysbench.reading import read_output
from oltplab.sysbench.slices import parse_slices, slot_plan
from oltplab.telemetry.collectors import Collected
from oltplab.telemetry.load import LoadSampler, round_interference
from oltplab.workloads.kinds import kind_of

GATE = Path(__file__).with_name("gates") / "sliced.lua"
# The host's load during a round, beside its first cell's output (telemetry/load.py).
ROUND_LOAD = "round-load"
# Time for every process of a round to start and connect before the first slot opens
# (here about a tenth of a second each).
LEAD_SECONDS = 1.0


@register("sliced")
class Sliced:
    """Per tier (and host), the engines kept running (ordering.Running); round by round,
    the cells of a round that share a thread count and rate measured together, slot by
    slot."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.running = Running(run)

    def measure(self, round_: Round) -> None:
        for group in tier_groups(round_.sessions):
            self.running.enter(group)
            rounds: dict[tuple[int, int, int], list[tuple[Session, Cell]]] = {}
            for session in group:
                chosen = round_.cells.get(session, [])
                if not chosen or self.running.serving(group, session, chosen) is None:
                    continue
                for cell in chosen:
                    rounds.setdefault((cell.repetition, cell.threads, cell.rate), []).append(
                        (session, cell)
                    )
            for key in sorted(rounds):
                _measure_round(self.run, self.running.engines, rounds[key])

    def close(self) -> None:
        self.running.close()


@dataclass(frozen=True)
class _Timetable:
    """A round's slots: how many cells share them, when the first opens, how many each
    cell owns, and how long every process runs."""

    slots: int
    t0_ms: int
    owned: int
    seconds: int


def _measure_round(
    run: Run, running: dict[str, OpenSession], members: list[tuple[Session, Cell]]
) -> None:
    """One sysbench process per cell, all started together; cell i runs in slot i of each
    cycle (the sessions' order, which turns from round to round)."""
    protocol = run.spec.protocol
    slots = len(members)
    per_cell = math.ceil(protocol.measure_seconds / protocol.slice_seconds)
    total = slots * per_cell * protocol.slice_seconds
    run.ensure_space("measure a round")
    outputs = []
    # The cells start together, so the ledger gives them one start time, not one each.
    started_at = now()
    for session, cell in members:
        folder = results_folder(run, running[session.engine].state, session)
        reads_only = run.spec.workload(cell.workload).reads_only
        before = run.measured_before.get(cell.key, 0)
        outputs.append(output_of(folder / cell_stem(cell, reads_only, before)))
        run.ledger.mark_running(cell, run.resolved.run_id, started_at=started_at)
    run.phase(
        Stage.CELLS,
        f"{slots} cells sliced together ({members[0][1].label} ...)",
        float(total),
    )
    # Started before t0, each process reaches its time limit after the last slot closes;
    # one waiting for its next slot then runs a last event there, which is not counted.
    timetable = _Timetable(
        slots,
        round((time.time() + LEAD_SECONDS) * 1000),
        per_cell,
        math.ceil(LEAD_SECONDS + total),
    )
    with ExitStack() as stack:
        options = {}
        for engine, opened in running.items():
            if any(session.engine == engine for session, _ in members):
                options[engine] = stack.enter_context(opened.state.sysbench_options().present())
        jobs = [
            _job(
                run,
                running[session.engine].state,
                cell,
                options[session.engine],
                output,
                slot,
                timetable,
            )
            for slot, ((session, cell), output) in enumerate(zip(members, outputs, strict=True))
        ]
        # Other load in the round's seconds, judged once for all its cells: they share them.
        load_file = beside(stem_of(outputs[0]), ROUND_LOAD, "jsonl")
        sampler = LoadSampler(None, load_file, timetable.t0_ms / 1000)
        sampler.start()
        try:
            results = execute_together(
                jobs, timetable.seconds + protocol.sysbench_grace_seconds, run.display.advance
            )
        except KeyboardInterrupt:
            run.ledger.requeue(failed_too=False)
            raise
        finally:
            sampler.stop()
    disturbed = round_interference(load_file, math.ceil(total))
    for (session, cell), output, result in zip(members, outputs, results, strict=True):
        opened = running[session.engine]
        sliced, collected = _own_slices(output, opened.state, protocol.slice_seconds)
        opened.record(cell, output, sliced, Judged(result, collected, round_load=disturbed))


def _own_slices(
    output: Path, state: EngineState, slice_seconds: float
) -> tuple[SysbenchOutput, Collected]:
    """A cell's output read from its own slices only, with the server's CPU in each."""
    text = output.read_text(errors="replace")
    plan = slot_plan(text)
    sliced = read_output(output)
    if plan is None:  # cut off before it said which slices were its own: none measured
        sliced = replace(sliced, summary=None)
    wanted = plan.wanted if plan is not None else set()
    slices = parse_slices(text, wanted, os.sysconf("SC_CLK_TCK"))
    collected = Collected(
        rows=[
            (*metrics.SERVER_CPU, second, cpu / slice_seconds)
            for second, (_, cpu) in enumerate(sorted(slices.server_cpu_s.items()), start=1)
        ]
    )
    if state.server.server_pid() is not None and len(slices.server_cpu_s) < len(wanted):
        collected.missing("the server's CPU was not read in every slice")
    return sliced, collected


def _job(
    run: Run,
    state: EngineState,
    cell: Cell,
    connection: PurePath,
    output: Path,
    slot: int,
    timetable: _Timetable,
) -> Job:
    spec = run.spec
    workload = spec.workload(cell.workload)
    gate = {
        "slot": slot,
        "slots": timetable.slots,
        "slice_ms": round(spec.protocol.slice_seconds * 1000),
        "t0_ms": timetable.t0_ms,
        "server_pid": state.server.server_pid() or 0,
        "owned": timetable.owned,
    }
    seconds = timetable.seconds
    call = gated(kind_of(workload).call(spec, workload, cell.threads), spec, seconds, gate, GATE)
    return Job(call.args(run.resolved.sysbench, connection), output, state.target(), call.env)
