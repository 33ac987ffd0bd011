"""Marks that put a measured cell's numbers in doubt, with a sense of proportion."""

from __future__ import annotations

import numpy as np

from oltplab.sysbench.output import SysbenchOutput

# The flags a cell can carry in the ledger, each named once, here: the glossary of the
# documentation defines each (tests/fast/test_glossary.py holds the two lists together).
EMPTY = "empty"
TRUNCATED = "truncated"
ERRORS = "errors"
RECONNECTS = "reconnects"
SHORT = "short"
STALL = "stall"
MISSING_INTERVALS = "missing-intervals"
EXTRA_INTERVALS = "extra-intervals"
# Set by the measuring session, from what it sees beside sysbench's output.
CLIENT_BOUND = "client-bound"
TELEMETRY_GAP = "telemetry-gap"
# An adaptive cell that never met the stopping rule (base/stopping_rule.py) and ran its longest.
UNSETTLED = "unsettled"
INTERFERENCE = "interference"
# A workload kind found the cell's data wrong afterwards (the TPC-C-like kind's
# consistency conditions).
INCONSISTENT = "inconsistent"
# Flags told next to a cell that do not make its numbers suspect.
INFORMATIONAL_FLAGS = frozenset({TELEMETRY_GAP})
# Ignored errors (deadlocks and the like) up to this share of transactions are told, but
# leave the cell in the findings: one deadlock in 900 s says nothing about its throughput.
ERROR_RATE_LIMIT = 0.001
# An open-loop cell that served this much less than it was offered let its queue grow: its
# latency is a lower bound (the events still queued at the end were never measured).
SATURATED = "saturated"
SATURATED_SHORTFALL = 0.05
# sysbench offers events at random (Poisson) times: over a short window at a low rate the
# count offered itself varies (+-4.5% at 100 tps for 5 s). A shortfall within this many
# standard deviations of that count is the arrivals' chance, unless the queue holds it.
SATURATED_DEVIATIONS = 3.0
FLAGS = (
    EMPTY, TRUNCATED, ERRORS, RECONNECTS, SHORT, SATURATED, STALL, MISSING_INTERVALS,
    EXTRA_INTERVALS, CLIENT_BOUND, TELEMETRY_GAP, UNSETTLED, INTERFERENCE, INCONSISTENT,
)  # fmt: skip


def saturated(offered_tps: float, served_tps: float, seconds: float, queued_at_end: float) -> bool:
    """Whether an open-loop run served less than it was offered beyond the share allowed,
    and the arrivals' randomness cannot explain it.

    What was served is what arrived less what still waited at the end, so a shortfall is
    the arrivals' chance plus that queue. The engine fell behind when the shortfall is
    beyond chance, or when the queue alone holds the share allowed. A queue of one event
    at the last report is an arrival not yet picked up: one CI run served 949 of 1,000
    events offered at 100 tps for 10 s (51 short, 3 deviations being 95), queue 0 at every
    report but the stalls' and 1 at the end, and was not behind."""
    expected = offered_tps * seconds
    shortfall = (offered_tps - served_tps) * seconds
    allowed = SATURATED_SHORTFALL * expected
    if shortfall <= allowed:
        return False
    return queued_at_end > allowed or shortfall > SATURATED_DEVIATIONS * expected**0.5


def validity_flags(
    output: SysbenchOutput, seconds: float | None, interval: float | None = None, rate: int = 0
) -> list[str]:
    """Marks that make a measured cell suspect; each one is listed next to its numbers.

    `seconds` is how long the run was asked to last and `interval` how often it was asked
    to report; for imported files both are unknown, and the summary's total time and the
    interval the output shows stand in for them. A file that reports no intervals and was
    not asked to is a valid summary-only run.
    """
    if output.empty:
        return [EMPTY]
    if output.queue_overflowed:
        return [SATURATED]  # it stopped at once, saying why: nothing else is to be judged
    flags = []
    summary = output.summary
    if summary is None:
        flags.append(TRUNCATED)
    else:
        if summary.errors > 0:
            flags.append(ERRORS)
        if summary.reconnects > 0:
            flags.append(RECONNECTS)
        if seconds is not None and summary.total_time_s < seconds * 0.95:
            flags.append(SHORT)
        offered = rate or output.rate
        queued = float(output.queue[-1, 1]) if len(output.queue) else 0.0
        if offered and saturated(offered, summary.tps, summary.total_time_s, queued):
            flags.append(SATURATED)
    if seconds is None and summary is not None:
        seconds = summary.total_time_s
    if output.stalls:
        flags.append(STALL)
    step = output.interval or interval
    if step is None:
        return flags
    seen = output.seconds
    # Gaps against the samples' own spacing: a sliced cell numbers its slices 1, 2, ...
    # whatever their length.
    spaced = np.diff(seen)
    gaps = bool(len(spaced) and np.any(spaced > float(np.median(spaced)) * 1.5))
    expected = int(seconds // step) if seconds is not None else None
    if gaps or (expected is not None and len(seen) < expected - 1):
        flags.append(MISSING_INTERVALS)
    elif expected is not None and len(seen) > expected + 1:
        flags.append(EXTRA_INTERVALS)
    return flags


def suspect_flags(flags: tuple[str, ...], error_rate: float | None) -> tuple[str, ...]:
    """The flags that put the numbers in doubt: not the informational ones, and `errors`
    only above ERROR_RATE_LIMIT of the transactions."""
    return tuple(
        f
        for f in flags
        if f not in INFORMATIONAL_FLAGS
        and not (f == ERRORS and error_rate is not None and error_rate <= ERROR_RATE_LIMIT)
    )


def stall_notes(output: SysbenchOutput) -> str:
    """Where the stalls were, as seconds of the run: "stall 12-16 s"."""
    return ", ".join(f"stall {first}-{last} s" for first, last in output.stalls)
