"""Why a cell or a warm-up failed, said from what sysbench printed, how it ended and
whether the server survived it."""

from __future__ import annotations

from oltplab.engines.server import EngineState
from oltplab.sysbench.driver import SysbenchRun
from oltplab.sysbench.output import SysbenchOutput


def failure_reason(
    result: SysbenchRun, output: SysbenchOutput, state: EngineState, alive: bool | None = None
) -> str:
    """Why a sysbench run gave no cell, in words: each cause seen, or that it printed no
    summary."""
    parts = []
    if output.queue_overflowed:
        parts.append(
            "saturated: the engine fell so far behind the rate offered that sysbench's queue"
            " of waiting events filled and sysbench stopped (offer less, or add threads)"
        )
    alive = state.server.alive() if alive is None else alive
    if not alive:
        parts.append(f"{state.server.exit_description()} during the cell")
    if result.timed_out:
        parts.append(f"sysbench did not finish within {result.seconds:.0f} s and was killed")
    elif result.returncode is not None and result.returncode < 0:
        parts.append(f"sysbench was killed by signal {-result.returncode}")
    elif result.returncode not in (0, None):
        parts.append(f"sysbench exited with code {result.returncode}")
    if output.fatal:
        parts.append(f"sysbench said: {output.fatal_line[:300]}")
    log_tail = state.server.session_log_tail(3)
    if log_tail and not alive:
        parts.append(f"error log: {log_tail[-600:]}")
    return "; ".join(parts) or "sysbench printed no summary"
