"""Sliced rounds: the cells of a round run at the same time, each sysbench process in its
own time slots (`slice_seconds` each, in turn; measure/workloads/sliced.lua holds each
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
from dataclasses import replace
from pathlib import Path, PurePath

from oltplab.base import metrics
from oltplab.engines.server import EngineState
from oltplab.measure.phases import Stage
from oltplab.measure.session import (
    Opened,
    RunContext,
    close_session,
    heaviest,
    open_session,
    record_cell,
    results_folder,
    tier_groups,
)
from oltplab.measure.workloads import gated
from oltplab.plan import Cell, Session
from oltplab.store.directory import beside, cell_stem, output_of, stem_of
from oltplab.store.recording import now
from oltplab.sysbench.driver import Job, execute_together
from oltplab.sysbench.kinds import kind_of
from oltplab.sysbench.reading import read_output
from oltplab.sysbench.slices import parse_slices, slot_plan
from oltplab.telemetry.collectors import Collected
from oltplab.telemetry.load import LoadSampler, round_interference

GATE = Path(__file__).with_name("workloads") / "sliced.lua"
# The host's load during a round, beside its first cell's output (telemetry/load.py).
ROUND_LOAD = "round-load"
# Time for every process of a round to start and connect before the first slot opens
# (here about a tenth of a second each).
LEAD_SECONDS = 1.0


def run_sliced(ctx: RunContext, sessions: list[Session], cells: dict[Session, list[Cell]]) -> None:
    """Per tier (and host), the engines started once; then round by round, the cells of a
    round that share a thread count and rate measured together, slot by slot."""
    for group in tier_groups(sessions):
        running: dict[str, tuple[Opened, Session]] = {}
        try:
            rounds: dict[tuple[int, int, int], list[tuple[Session, Cell]]] = {}
            for session in group:
                chosen = cells.get(session, [])
                if chosen and session.engine not in running:
                    first = heaviest(ctx, [s for s in group if s.engine == session.engine])
                    opened = open_session(ctx, first, chosen)
                    if opened is None:
                        continue
                    running[session.engine] = (opened, first)
                for cell in chosen:
                    if session.engine in running:
                        key = (cell.repetition, cell.threads, cell.rate)
                        rounds.setdefault(key, []).append((session, cell))
            for key in sorted(rounds):
                _measure_round(ctx, {e: o for e, (o, _) in running.items()}, rounds[key])
        finally:
            for opened, first in running.values():
                close_session(ctx, opened, first)


def _measure_round(
    ctx: RunContext, running: dict[str, Opened], members: list[tuple[Session, Cell]]
) -> None:
    """One sysbench process per cell, all started together; cell i runs in slot i of each
    cycle (the sessions' order, which turns from round to round)."""
    protocol = ctx.spec.protocol
    slots = len(members)
    per_cell = math.ceil(protocol.measure_seconds / protocol.slice_seconds)
    total = slots * per_cell * protocol.slice_seconds
    ctx.ensure_space("measure a round")
    outputs = []
    # The cells start together, so the ledger gives them one start time, not one each.
    started_at = now()
    for session, cell in members:
        state = running[session.engine].state
        folder = results_folder(ctx, state, session)
        reads_only = ctx.spec.workload(cell.workload).reads_only
        before = ctx.measured_before.get(cell.key, 0)
        outputs.append(output_of(folder / cell_stem(cell, reads_only, before)))
        ctx.ledger.mark_running(cell, ctx.run_id, started_at=started_at)
    ctx.phase(
        Stage.CELLS,
        f"{slots} cells sliced together ({members[0][1].label} ...)",
        float(total),
    )
    t0_ms = round((time.time() + LEAD_SECONDS) * 1000)
    # Started before t0, each process reaches its time limit after the last slot closes;
    # one waiting for its next slot then runs a last event there, which is not counted.
    seconds = math.ceil(LEAD_SECONDS + total)
    with ExitStack() as stack:
        options = {}
        for engine, opened in running.items():
            if any(session.engine == engine for session, _ in members):
                options[engine] = stack.enter_context(opened.state.sysbench_options().present())
        jobs = []
        for slot, ((session, cell), output) in enumerate(zip(members, outputs, strict=True)):
            state = running[session.engine].state
            job = _job(
                ctx, state, cell, options[session.engine], output, slot, slots, t0_ms, seconds,
                per_cell,
            )  # fmt: skip
            jobs.append(job)
        # Other load in the round's seconds, judged once for all its cells: they share them.
        load_file = beside(stem_of(outputs[0]), ROUND_LOAD, "jsonl")
        sampler = LoadSampler(None, load_file, t0_ms / 1000)
        sampler.start()
        try:
            results = execute_together(
                jobs, seconds + protocol.sysbench_grace_seconds, ctx.display.advance
            )
        except KeyboardInterrupt:
            ctx.ledger.requeue(failed_too=False)
            raise
        finally:
            sampler.stop()
    disturbed = round_interference(load_file, math.ceil(total))
    ticks = os.sysconf("SC_CLK_TCK")
    for (session, cell), output, result in zip(members, outputs, results, strict=True):
        state = running[session.engine].state
        text = output.read_text(errors="replace")
        plan = slot_plan(text)
        sliced = read_output(output)
        if plan is None:  # cut off before it said which slices were its own: none measured
            sliced = replace(sliced, summary=None)
        wanted = plan.wanted if plan is not None else set()
        slices = parse_slices(text, wanted, ticks)
        collected = Collected(
            rows=[
                (*metrics.SERVER_CPU, second, cpu / protocol.slice_seconds)
                for second, (_, cpu) in enumerate(sorted(slices.server_cpu_s.items()), start=1)
            ]
        )
        if state.server.server_pid() is not None and len(slices.server_cpu_s) < len(wanted):
            collected.missing("the server's CPU was not read in every slice")
        record_cell(ctx, state, cell, output, sliced, result, collected, round_load=disturbed)


def _job(
    ctx: RunContext,
    state: EngineState,
    cell: Cell,
    connection: PurePath,
    output: Path,
    slot: int,
    slots: int,
    t0_ms: int,
    seconds: int,
    owned: int,
) -> Job:
    spec = ctx.spec
    workload = spec.workload(cell.workload)
    gate = {
        "slot": slot,
        "slots": slots,
        "slice_ms": round(spec.protocol.slice_seconds * 1000),
        "t0_ms": t0_ms,
        "server_pid": state.server.server_pid() or 0,
        "owned": owned,
    }
    call = gated(kind_of(workload).call(spec, workload, cell.threads), spec, seconds, gate, GATE)
    return Job(call.args(ctx.sysbench, connection), output, state.target(), call.env)
