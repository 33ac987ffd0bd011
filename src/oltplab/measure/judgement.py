"""A cell's judgement: from what sysbench printed and what the run saw around it, the
frozen outcome the ledger keeps: its flags, its notes and, when it failed, why."""

from __future__ import annotations

from dataclasses import dataclass

from oltplab.base import metrics
from oltplab.base.stats import steady
from oltplab.base.stopping_rule import Stop
from oltplab.store.outcome import CellOutcome, TelemetryRow
from oltplab.sysbench import validity
from oltplab.sysbench.driver import CLIENT_BOUND_SHARE
from oltplab.sysbench.output import SysbenchOutput
from oltplab.sysbench.transactions import KindResults
from oltplab.telemetry.load import Interference, interference


@dataclass(frozen=True)
class Seen:
    """What the run saw of a cell beside sysbench's output (an imported file has none)."""

    seconds: int  # the length it is judged against: the protocol's, or the rule's stop
    interval: float | None  # how often sysbench was asked to report
    rate: int  # transactions a second offered; 0: closed loop
    client_share: float  # of the CPUs sysbench may use
    telemetry_gap: bool
    stopped: Stop | None  # where an adaptive cell stopped
    round_load: Interference | None  # a sliced round's other load; None: the cell's own
    notes: tuple[str, ...]  # the telemetry devices' own
    failure: str | None  # why it failed (sysbench's exit, the server's death); None: done


def judge(
    parsed: SysbenchOutput,
    seen: Seen | None,
    artifact: str,
    *,
    telemetry: tuple[TelemetryRow, ...] = (),
    clock: dict[str, object] | None = None,
    kind_results: KindResults | None = None,
) -> CellOutcome:
    """The cell's outcome: validity flags in a fixed order (sysbench's own, client-bound,
    telemetry gap, unsettled, inconsistent, interference), and the notes that say why."""
    disturbed = (seen.round_load or _interference(parsed, telemetry)) if seen else None
    if seen is None:
        flags = validity.validity_flags(parsed, None)
        failure: str | None = parsed.failure
    else:
        flags = validity.validity_flags(parsed, seen.seconds, seen.interval, seen.rate)
        failure = seen.failure
        if seen.client_share > CLIENT_BOUND_SHARE:
            flags.append(validity.CLIENT_BOUND)
        if seen.telemetry_gap:
            flags.append(validity.TELEMETRY_GAP)
        if seen.stopped is not None and not seen.stopped.settled:
            flags.append(validity.UNSETTLED)
    if kind_results is not None and kind_results.problems:
        flags.append(validity.INCONSISTENT)
    if disturbed is not None and disturbed.flagged:
        flags.append(validity.INTERFERENCE)
    notes = [
        validity.stall_notes(parsed),
        disturbed.note() if disturbed is not None and disturbed.flagged else "",
        f"client CPU {seen.client_share:.0%}" if seen is not None else "",
        seen.stopped.describe() if seen is not None and seen.stopped is not None else "",
        *(kind_results.problems if kind_results is not None else ()),
        *(seen.notes if seen is not None else ()),
    ]
    return CellOutcome(
        parsed.summary,
        tuple(flags),
        artifact,
        failure,
        ", ".join(filter(None, notes)),
        parsed.samples,
        telemetry,
        clock=clock,
        histogram=tuple(parsed.histogram),
        ignored_errors=tuple(parsed.ignored_errors),
        kind_results=kind_results,
    )


def _interference(parsed: SysbenchOutput, rows: tuple[TelemetryRow, ...]) -> Interference | None:
    """How much other load disturbed the steady seconds (after the warm-up cut of the
    per-second TPS, as the analysis cuts it)."""
    if parsed.interval != 1.0 or len(parsed.tps) < 2:
        return None
    cut, _ = steady(parsed.tps)
    other = {s: v for source, name, s, v in rows if (source, name) == metrics.OTHER_CPU}
    steal = {s: v for source, name, s, v in rows if (source, name) == metrics.STEAL}
    return interference(other, steal, cut + 1, len(parsed.tps))
