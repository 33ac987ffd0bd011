"""Open-loop cells and the latency users feel: percentiles per point from merged
histograms, latency against offered load (the hockey stick) with its knee, and closed
loop beside open loop where the same engine ran both (coordinated omission).

A closed-loop client waits for each answer before it asks again, so while a server stalls
nobody is waiting in line and the stall hides from the percentiles. An open-loop client
offers transactions at a fixed rate whatever the server does; the late ones queue, and
their latency counts the wait.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from oltplab.analysis.dataset import CellRecord, Dataset
from oltplab.analysis.estimate import Estimate
from oltplab.analysis.latency import PERCENTILES, Histogram, percentile_estimate
from oltplab.analysis.points import Point, point_of, usable
from oltplab.sysbench.validity import SATURATED

# The knee: the last offered rate before the p99 passes this many times its value at the
# lightest load offered, or before the queue grew (a saturated cell).
KNEE_FACTOR = 3.0
# A closed-loop and an open-loop p99 this many times apart deserve a sentence.
OMISSION_FACTOR = 2.0


def label(q: float) -> str:
    """`p99`, `p99.9`: a percentile as tables and exports name it."""
    return f"p{q:g}"


def cell_percentiles(dataset: Dataset, cell: CellRecord) -> dict[str, float] | None:
    """One run's p50 ... p99.9 and max, from its own histogram."""
    found = dataset.histograms.get(cell.key)
    if not found:
        return None
    histogram = Histogram.of(found)
    return {
        **{label(q): histogram.percentile(q) for q in PERCENTILES},
        "max": histogram.maximum,
    }


@dataclass(frozen=True)
class LatencyPoint:
    point: Point
    rate: int  # offered, 0 for closed loop
    achieved: float  # whole-run TPS, mean over runs
    saturated: bool
    runs: int
    percentiles: dict[str, Estimate]  # label -> merged percentile with its interval
    maximum: float


def latency_points(dataset: Dataset, include_flagged: bool = True) -> dict[Point, LatencyPoint]:
    """Every point with histograms: its runs merged, never averaged."""
    grouped: dict[Point, list[CellRecord]] = defaultdict(list)
    for cell in dataset.cells:
        # A saturated cell stays: its latency is a lower bound, and its row says so.
        saturated_only = set(cell.suspect_flags) <= {SATURATED}
        if cell.key in dataset.histograms and (usable(cell, include_flagged) or saturated_only):
            grouped[point_of(cell)].append(cell)
    out = {}
    for point, cells in grouped.items():
        runs = [Histogram.of(dataset.histograms[c.key]) for c in cells]
        merged = runs[0]
        for run in runs[1:]:
            merged = merged.merge(run)
        estimates = {
            label(q): e
            for q in PERCENTILES
            if (e := percentile_estimate(runs, q, "|".join(map(str, point)))) is not None
        }
        out[point] = LatencyPoint(
            point,
            cells[0].rate,
            sum(c.tps or 0.0 for c in cells) / len(cells),
            any(SATURATED in c.flags for c in cells),
            len(cells),
            estimates,
            merged.maximum,
        )
    return out


@dataclass(frozen=True)
class Curve:
    """One engine's latency against the load offered, at one thread count."""

    workload: str
    network: bool
    tier: str
    engine: str
    threads: int | None  # None: each rate had its own thread count (a capacity search)
    points: list[LatencyPoint]  # by offered rate
    knee: int | None  # the last rate before the latency turns up


def _knee(points: list[LatencyPoint]) -> int | None:
    lightest = points[0].percentiles.get("p99")
    knee = None
    for found in points:
        p99 = found.percentiles.get("p99")
        if found.saturated or p99 is None or lightest is None:
            break
        if p99.point > KNEE_FACTOR * lightest.point:
            break
        knee = found.rate
    return knee


def curves(dataset: Dataset, found: dict[Point, LatencyPoint]) -> list[Curve]:
    """A curve per engine and thread count; or per engine alone, when each rate was run at
    a thread count of its own (one thread per so many transactions offered)."""
    kinds = dataset.scenario_kinds
    grouped: dict[tuple[str, bool, str, str], list[LatencyPoint]] = defaultdict(list)
    for (scenario, tier, engine, _), point in found.items():
        kind = kinds[scenario]
        if kind.rate:
            grouped[(kind.workload, kind.network, tier, engine)].append(point)
    out = []
    for (workload, network, tier, engine), points in sorted(grouped.items()):
        rates = [p.rate for p in points]
        per_threads: dict[int | None, list[LatencyPoint]]
        if len(set(rates)) == len(rates):
            per_threads = {None: points}
        else:
            per_threads = defaultdict(list)
            for p in points:
                per_threads[p.point[3]].append(p)
        for threads, chosen in per_threads.items():
            chosen.sort(key=lambda p: p.rate)
            if len(chosen) >= 2:
                out.append(Curve(workload, network, tier, engine, threads, chosen, _knee(chosen)))
    return out


@dataclass(frozen=True)
class Omission:
    """Closed loop against open loop, for one engine at one thread count."""

    closed: LatencyPoint
    open: LatencyPoint

    @property
    def ratio(self) -> float | None:
        closed, opened = self.closed.percentiles.get("p99"), self.open.percentiles.get("p99")
        if closed is None or opened is None or not closed.point:
            return None
        return opened.point / closed.point


def omissions(dataset: Dataset, found: dict[Point, LatencyPoint]) -> list[Omission]:
    kinds = dataset.scenario_kinds
    out = []
    for (scenario, tier, engine, threads), point in sorted(found.items()):
        kind = kinds[scenario]
        if not kind.rate:
            continue
        closed = found.get((kind.closed.name, tier, engine, threads))
        if closed is not None:
            out.append(Omission(closed, point))
    return out
