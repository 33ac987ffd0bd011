"""A time-sliced cell's output (measure/gates/sliced.lua): per slice it ran in, the
events its threads started there and the server's CPU over the slice; and the cell's
per-second samples and summary made from its slices alone, since sysbench's own
per-second lines and latencies count the time the cell waited for its turn."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from oltplab.sysbench.output import SAMPLE_COLUMNS, SysbenchOutput

_SLICE = re.compile(r"^SLICE (\d+) (\d+) (\d+) (-?\d+)$", re.MULTILINE)
_SLOTS = re.compile(r"^SLOTS (\d+) (\d+) (\d+) (\d+)$", re.MULTILINE)


@dataclass(frozen=True)
class SlotPlan:
    """Which slices of a round were a cell's: slot `slot` of every cycle of `slots`, its
    first `owned` whole ones, each `slice_seconds` long."""

    slot: int
    slots: int
    owned: int
    slice_seconds: float

    @property
    def wanted(self) -> set[int]:
        return {self.slot + self.slots * k for k in range(self.owned)}


def slot_plan(text: str) -> SlotPlan | None:
    """The plan a sliced cell's output states (outputs of before it stated one: None)."""
    found = _SLOTS.search(text)
    if found is None:
        return None
    slot, slots, owned, slice_ms = (int(part) for part in found.groups())
    return SlotPlan(slot, slots, owned, slice_ms / 1000)


def as_measured(parsed: SysbenchOutput, text: str, ticks_per_second: int) -> SysbenchOutput:
    """A sliced cell's output as its own slices measured it; any other output as it is."""
    plan = slot_plan(text)
    if plan is None:
        return parsed
    slices = parse_slices(text, plan.wanted, ticks_per_second)
    return sliced_output(parsed, slices, plan.slice_seconds)


@dataclass(frozen=True)
class Slices:
    """Events per slice (all threads) and the server's CPU seconds per slice, where
    measured; slices numbered from the round's start, this cell's only."""

    events: dict[int, int]
    server_cpu_s: dict[int, float]


def parse_slices(text: str, wanted: set[int], ticks_per_second: int) -> Slices:
    """The SLICE lines of the slices wanted (the cell's whole ones: a process keeps running
    a little past its last slot, and its first and last may be cut)."""
    events: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for thread, slice_text, count, ticks in _SLICE.findall(text):
        slice_number = int(slice_text)
        if slice_number not in wanted:
            continue
        events[slice_number] = events.get(slice_number, 0) + int(count)
        if int(thread) == 0 and int(ticks) >= 0:
            cpu[slice_number] = int(ticks) / ticks_per_second
    return Slices(events, cpu)


def sliced_output(parsed: SysbenchOutput, slices: Slices, slice_seconds: float) -> SysbenchOutput:
    """The output as the cell's slices measured it: one sample per slice it owned (its
    `second` counting the cell's slices, 1, 2, ...), rates over the time it ran. Latency
    is not known (sysbench timed the waits too), so it is left out."""
    summary = parsed.summary
    owned = sorted(slices.events)
    if summary is None or not owned or not summary.transactions:
        return replace(parsed, summary=None)
    per_transaction = {
        "queries": summary.queries / summary.transactions,
        "reads": summary.reads / summary.transactions,
        "writes": summary.writes / summary.transactions,
        "other": summary.other / summary.transactions,
    }
    rows = []
    for number, slice_number in enumerate(owned, start=1):
        tps = slices.events[slice_number] / slice_seconds
        row = dict.fromkeys(SAMPLE_COLUMNS, 0.0)
        row.update(
            second=float(number),
            threads=float(parsed.threads or 0),
            tps=tps,
            qps=tps * per_transaction["queries"],
            reads_per_s=tps * per_transaction["reads"],
            writes_per_s=tps * per_transaction["writes"],
            other_per_s=tps * per_transaction["other"],
            lat_pct_ms=float("nan"),
        )
        rows.append([row[column] for column in SAMPLE_COLUMNS])
    samples = np.array(rows, dtype=float)
    active = len(owned) * slice_seconds
    transactions = sum(slices.events.values())
    totals = {name: round(share * transactions) for name, share in per_transaction.items()}
    nan = float("nan")
    return replace(
        parsed,
        samples=samples,
        tps=samples[:, SAMPLE_COLUMNS.index("tps")],
        seconds=samples[:, 0],
        interval=slice_seconds,
        histogram=(),
        summary=replace(
            summary,
            transactions=transactions,
            events=transactions,
            queries=totals["queries"],
            reads=totals["reads"],
            writes=totals["writes"],
            other=totals["other"],
            tps=transactions / active,
            qps=totals["queries"] / active,
            total_time_s=active,
            lat_min_ms=nan,
            lat_avg_ms=nan,
            lat_max_ms=nan,
            lat_pct_ms=nan,
            interval_s=slice_seconds,
        ),
    )
