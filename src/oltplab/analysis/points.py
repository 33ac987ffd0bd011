"""Points, their figures and their comparisons: what every table is made of.

A point is (scenario, tier, engine, threads): the repetitions of one cell. It has two
figures that are never mixed up: `whole_run`, the mean of what sysbench printed for each
whole run (the figure published reports quote), and `steady`, the estimate over the
steady seconds after each run's warm-up cut, with the interval made from those same
seconds. Comparisons between points are made once per analysis and shared by every table.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from statistics import mean

import numpy as np

from oltplab.analysis.dataset import CellRecord, Dataset
from oltplab.analysis.estimate import (
    Comparison,
    Estimate,
    PointSample,
    across_machines,
    compare,
    mean_estimate,
)
from oltplab.analysis.machines import MachineSpread, log_variance_of_mean
from oltplab.base.metrics import TPS, Measure
from oltplab.base.stats import steady
from oltplab.base.wire import MYSQL
from oltplab.engines.families import registered

Point = tuple[str, str, str, int]  # scenario, tier, engine, threads


@dataclass(frozen=True)
class Value:
    """One point's figure: sysbench's whole-run value (mean over repetitions) and, for TPS
    with per-second data, the steady estimate with its interval."""

    whole_run: float
    runs: int
    flags: tuple[str, ...]
    steady: Estimate | None = None


def usable(cell: CellRecord, include_flagged: bool) -> bool:
    return cell.measured and (include_flagged or not cell.suspect_flags)


@dataclass(frozen=True)
class CellCut:
    """A cell's warm-up cut (seconds dropped) and its steady series."""

    cut: int  # per-interval lines dropped
    sample: PointSample
    interval: float = 1.0  # seconds per line

    @property
    def steady_from(self) -> int:
        """The first second counted, 1-based: the same in every table and chart."""
        return round(self.cut * self.interval) + 1


@dataclass
class Points:
    """Every point's figures and samples, computed once from a dataset, and the comparisons
    between points, each made once however many tables show it."""

    dataset: Dataset
    # How much machines differ (from their canaries), for comparisons across machines.
    spread: MachineSpread | None = None
    # What the points are compared on: TPS, or a per-transaction cost over the same seconds.
    measure: Measure = TPS
    cuts: dict[str, CellCut] = field(default_factory=dict)
    _samples: dict[bool, dict[Point, PointSample]] = field(default_factory=dict)
    _values: dict[tuple[str, bool], dict[Point, Value]] = field(default_factory=dict)
    _comparisons: dict[tuple[Point, Point, bool], Comparison | None] = field(default_factory=dict)
    _machines: dict[bool, dict[Point, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for cell in self.dataset.cells:
            series = self.dataset.series.get(cell.key)
            if series is not None and len(series) >= 2:
                cut, part = steady(series, self.dataset.fixed_cut)
                sample = PointSample({cell.repetition: part})
                if self.measure.per_transaction or self.measure.series:
                    found = (
                        self._per_transaction(cell, cut, part)
                        if self.measure.per_transaction
                        else self._own_series(cell, cut)
                    )
                    if found is None:
                        continue
                    sample = found
                self.cuts[cell.key] = CellCut(cut, sample, cell.interval_s or 1.0)

    def _per_transaction(self, cell: CellRecord, cut: int, tps: np.ndarray) -> PointSample | None:
        """The measure's per-second cost over the steady seconds, each second weighted by
        its transactions; None where the cell has no such series, or its lines are not on
        the telemetry's clock (sysbench printing every N > 1 seconds)."""
        if (cell.interval_s or 1.0) != 1.0 and not cell.sliced:
            return None
        telemetry = self.dataset.telemetry.get(cell.key, {})
        found = [dict(values) for metric, values in telemetry.items()
                 if metric in self.measure.per_transaction]  # fmt: skip
        if not found:
            return None
        cost = found[0]
        # The steady part's i-th second is second cut + i + 1 of the run.
        kept = [i for i in range(len(tps)) if cut + i + 1 in cost and tps[i] > 0]
        if len(kept) < 2:
            return None
        weights = tps[kept]
        seconds = [cut + i + 1 for i in kept]
        values = np.array([cost[s] * self.measure.scale for s in seconds]) / weights
        return PointSample({cell.repetition: values}, {cell.repetition: weights})

    def _own_series(self, cell: CellRecord, cut: int) -> PointSample | None:
        """The measure's own per-second series (a workload kind's) over the seconds the
        TPS series' cut leaves, its last second dropped: the run ended within it."""
        assert self.measure.series is not None
        found = dict(self.dataset.telemetry.get(cell.key, {}).get(self.measure.series, []))
        start = round(cut * (cell.interval_s or 1.0))
        seconds = sorted(second for second in found if second > start)[:-1]
        if len(seconds) < 2:
            return None
        values = np.array([found[second] * self.measure.scale for second in seconds])
        return PointSample({cell.repetition: values})

    def samples(self, include_flagged: bool = True) -> dict[Point, PointSample]:
        """Each point's steady per-second TPS series, by repetition."""
        if include_flagged not in self._samples:
            found: dict[Point, list[PointSample]] = defaultdict(list)
            for cell in self.dataset.cells:
                cut = self.cuts.get(cell.key)
                if cut and usable(cell, include_flagged):
                    found[point_of(cell)].append(cut.sample)
            # A point with one run is that run's sample, so what it caches is shared.
            self._samples[include_flagged] = {
                point: parts[0] if len(parts) == 1 else _joined(parts)
                for point, parts in found.items()
            }
        return self._samples[include_flagged]

    def values(self, metric: str | None = None, include_flagged: bool = True) -> dict[Point, Value]:
        """Each point's figure: for TPS and sysbench's other whole-run figures, the mean of
        what it printed beside the steady estimate; a per-transaction cost has no whole-run
        figure of sysbench's, so its steady estimate is both."""
        metric = metric or self.measure.name
        key = (metric, include_flagged)
        if key not in self._values:
            self._values[key] = self._compute_values(metric, include_flagged)
        return self._values[key]

    def _compute_values(self, metric: str, include_flagged: bool) -> dict[Point, Value]:
        grouped: dict[Point, list[CellRecord]] = defaultdict(list)
        for cell in self.dataset.cells:
            if include_flagged or not cell.suspect_flags:
                grouped[point_of(cell)].append(cell)
        sample = self.samples(include_flagged) if metric == self.measure.name else {}
        result = {}
        for point, cells in grouped.items():
            if self.measure.per_transaction and metric == self.measure.name:
                if point not in sample:
                    continue
                estimate = mean_estimate(sample[point])
                flags = tuple(sorted({f for c in cells for f in c.suspect_flags}))
                result[point] = Value(estimate.point, sample[point].reps, flags, estimate)
                continue
            found = [c.metric(metric) for c in cells if c.measured]
            figures = [v for v in found if v is not None]
            if figures:
                flags = tuple(sorted({f for c in cells for f in c.suspect_flags}))
                interval = mean_estimate(sample[point]) if point in sample else None
                result[point] = Value(mean(figures), len(figures), flags, interval)
        return result

    def machines(self, point: Point, include_flagged: bool = True) -> str:
        """The machine(s) a point's cells were measured on ("" when one machine measured
        everything)."""
        if not self.dataset.machines:
            return ""
        if include_flagged not in self._machines:
            found: dict[Point, set[str]] = defaultdict(set)
            for cell in self.dataset.cells:
                if usable(cell, include_flagged):
                    found[point_of(cell)].add(cell.machine)
            self._machines[include_flagged] = {p: ", ".join(sorted(m)) for p, m in found.items()}
        return self._machines[include_flagged].get(point, "")

    def comparison(self, a: Point, b: Point, include_flagged: bool = True) -> Comparison | None:
        """a against b over their steady seconds; None when either has no per-second data.
        Measured on different machines, it carries the machines' spread, or is undecided."""
        key = (a, b, include_flagged)
        if key not in self._comparisons:
            sample = self.samples(include_flagged)
            found = None
            if a in sample and b in sample:
                where = (self.machines(a, include_flagged), self.machines(b, include_flagged))
                if where[0] != where[1]:
                    within = (log_variance_of_mean(sample[a]), log_variance_of_mean(sample[b]))
                    spread = self.spread and (self.spread.variance, self.spread.machines)
                    found = across_machines(sample[a], sample[b], where, spread or None, within)
                else:
                    found = compare(
                        sample[a], sample[b], paired=self.dataset.paired, label=f"{a}|{b}"
                    )
            self._comparisons[key] = found
        return self._comparisons[key]


def _joined(parts: list[PointSample]) -> PointSample:
    """One point's repetitions, each a sample of its own, as one sample."""
    series = {r: s for part in parts for r, s in part.series.items()}
    if any(part.weights is None for part in parts):
        return PointSample(series)
    return PointSample(series, {r: w for part in parts for r, w in (part.weights or {}).items()})


def point_of(cell: CellRecord) -> Point:
    return (cell.scenario, cell.tier, cell.engine, cell.threads)


def diff_pct(value: float, baseline: float) -> float:
    return (value / baseline - 1.0) * 100.0


@dataclass(frozen=True)
class Grid:
    """Engines as rows, thread counts as columns, like the report's Table 6.1.1: the
    whole-run figures sysbench printed."""

    scenario: str
    tier: str
    metric: str
    threads: list[int]
    rows: list[tuple[str, list[Value | None]]]


def grids(points: Points, metric: str) -> list[Grid]:
    dataset, found = points.dataset, points.values(metric)
    out = []
    for scenario in dataset.scenarios:
        for tier in dataset.tiers(scenario):
            threads = dataset.threads(scenario, tier)
            engines = dataset.engines_in(scenario, tier)
            rows = [(e, [found.get((scenario, tier, e, t)) for t in threads]) for e in engines]
            out.append(Grid(scenario, tier, metric, threads, rows))
    return out


def dbms(family: str) -> str:
    """MySQL, MariaDB and Percona Server are one kind of server, PostgreSQL another: a
    family's kind is its protocol's. A family not registered (`unknown`, or a plugin's
    that is not loaded) counts as one of MySQL's kind."""
    protocols = {known.name: known.client_protocol for known in registered()}
    return protocols.get(family, MYSQL).kind


def cross_family(dataset: Dataset, engines: list[str]) -> str | None:
    """ "MySQL-family vs PostgreSQL" when these engines are different kinds of server."""
    kinds = sorted({dbms(dataset.engines[e].family) for e in engines if e in dataset.engines})
    return " vs ".join(kinds) if len(kinds) > 1 else None
