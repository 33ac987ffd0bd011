"""Latency as users feel it: whole distributions, not one percentile.

Every run keeps sysbench's `--histogram`: events counted in sysbench's own buckets (1,024
of them, log-spaced from 1 us to 100 s, each named by its value in ms). The buckets are
the same in every run, so the histograms of repetitions, or of shards, merge exactly by
adding counts; a percentile of several runs is the percentile of their merged histogram,
never an average of percentiles. Its interval comes from the repetitions (a bootstrap
that merges resampled runs), or, for one run, from resampling its events.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from oltplab.analysis.estimate import CONFIDENCE, Estimate

PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9)
# The service-time percentiles a transaction type is shown with, in the report and exports.
SERVICE_PERCENTILES = (50, 95, 99, 99.9)
DRAWS = 1000
# sysbench's histogram: this many buckets between these bounds (ms), log-spaced.
BUCKETS, LOWEST_MS, HIGHEST_MS = 1024, 0.001, 100_000.0
_PER_BUCKET = (BUCKETS - 1) / (math.log(HIGHEST_MS) - math.log(LOWEST_MS))


def bucket(latency_ms: float) -> float:
    """The bucket a latency falls in (the nearest on the log scale), named by its value as
    sysbench prints it."""
    offset = math.log(max(latency_ms, LOWEST_MS)) - math.log(LOWEST_MS)
    index = min(max(math.floor(offset * _PER_BUCKET + 0.5), 0), BUCKETS - 1)
    return round(math.exp(index / _PER_BUCKET + math.log(LOWEST_MS)), 3)


@dataclass(frozen=True)
class Histogram:
    """Events per bucket (the bucket's value in ms), sorted by value."""

    values: np.ndarray
    counts: np.ndarray

    @classmethod
    def of(cls, buckets: Iterable[tuple[float, int]]) -> Histogram:
        merged: dict[float, int] = {}
        for value, count in buckets:
            merged[value] = merged.get(value, 0) + count
        values = np.array(sorted(merged), dtype=float)
        return cls(values, np.array([merged[v] for v in values], dtype=np.int64))

    @classmethod
    def from_latencies(cls, latencies_ms: Sequence[float]) -> Histogram:
        """What sysbench would print for these events."""
        return cls.of((bucket(x), 1) for x in latencies_ms)

    @property
    def events(self) -> int:
        return int(self.counts.sum())

    def merge(self, other: Histogram) -> Histogram:
        values = np.union1d(self.values, other.values)
        counts = np.zeros(len(values), dtype=np.int64)
        counts[np.searchsorted(values, self.values)] += self.counts
        counts[np.searchsorted(values, other.values)] += other.counts
        return Histogram(values, counts)

    def percentile(self, q: float) -> float:
        """The first bucket by which q% of the events (rounded, as sysbench rounds them)
        are counted: what sysbench itself prints for that percentile."""
        if not self.events:
            return math.nan
        wanted = math.floor(self.events * q / 100 + 0.5)
        return float(self.values[np.searchsorted(np.cumsum(self.counts), max(wanted, 1))])

    @property
    def maximum(self) -> float:
        return float(self.values[-1]) if len(self.values) else math.nan

    @property
    def mean(self) -> float:
        """The events' mean, each counted at its bucket's value (within 1% of its own)."""
        if not self.events:
            return math.nan
        return float((self.values * self.counts).sum() / self.events)


@dataclass(frozen=True)
class ServiceTimes:
    """A transaction type's service times (ms), the figures go-tpc and HammerDB users read:
    from sysbench's log-scale buckets, so each is within 1% of the times it stands for."""

    avg: float
    percentiles: tuple[float, ...]  # at SERVICE_PERCENTILES
    max: float


def service_times(buckets: Iterable[tuple[float, int]]) -> ServiceTimes | None:
    """None when no event was counted."""
    histogram = Histogram.of(buckets)
    if not histogram.events:
        return None
    return ServiceTimes(
        histogram.mean,
        tuple(histogram.percentile(q) for q in SERVICE_PERCENTILES),
        histogram.maximum,
    )


def _seed(*parts: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("|".join(map(str, parts)).encode()))


def percentile_estimate(runs: list[Histogram], q: float, label: str = "") -> Estimate | None:
    """The q-th percentile of the merged runs, with its interval: a bootstrap over the
    runs when there are two or more (each draw merges resampled runs), else over the
    events of the one run (multinomial). The interval is widened to its point if needed."""
    runs = [r for r in runs if r.events]
    if not runs:
        return None
    values = np.unique(np.concatenate([r.values for r in runs]))
    table = np.zeros((len(runs), len(values)), dtype=np.int64)
    for row, run in zip(table, runs, strict=True):
        row[np.searchsorted(values, run.values)] = run.counts
    merged = Histogram(values, table.sum(axis=0))
    point = merged.percentile(q)
    rng = _seed(label, q, merged.events)
    if len(runs) >= 2:
        picks = rng.integers(0, len(runs), (DRAWS, len(runs)))
        resampled = table[picks].sum(axis=1)
        method, n = f"bootstrap over {len(runs)} runs' histograms", len(runs)
    else:
        resampled = rng.multinomial(merged.events, merged.counts / merged.events, size=DRAWS)
        method, n = "bootstrap over the run's events", merged.events
    draws = [Histogram(values, counts).percentile(q) for counts in resampled]
    tail = (1 - CONFIDENCE) / 2
    low, high = np.quantile(draws, [tail, 1 - tail])
    return Estimate(point, min(float(low), point), max(float(high), point), n, method)
