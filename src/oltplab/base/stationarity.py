"""Whether the engine's own state has settled: the signals that move before throughput does.

TPS can be flat for minutes while purge falls behind, redo piles up towards its capacity,
dirty pages accumulate or the buffer pool is still filling; the throughput follows later.
So a cell may stop early only when these levels show no trend either: InnoDB's history list
length, checkpoint age, dirty and free pages and pending I/O; PostgreSQL's checkpoint age
(WAL since the redo point, against max_wal_size), the buffers it writes a second and the
dead tuples of the benchmark's tables. Each is judged over
the steady part of the cell and over its last half and last quarter: a trend that began
lately, or a cycle longer than the window (a sawtooth still rising), shows at one scale or
another, and stops showing only once the window holds several of the engine's cycles.

A trend counts when the fitted line's change across the window, less twice its standard
error, is more than a tenth of the signal's scale: its capacity where it has one (the buffer
pool's pages, the redo's bytes), else its own level, but for a count of what transactions
leave behind (a history list, dead tuples) never less than one second's transactions (a
list shorter than that is purge keeping up, whatever it does), and for pending I/O never
less than the threads running (each may wait on one request: a queue that short is not
the disk falling behind). A tenth is not fitted to any
data: it is where a level has clearly moved (a buffer pool a tenth fuller, a history list a
tenth longer), well above what a settled engine's levels wander by, which the standard
error already absorbs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from oltplab.base import metrics
from oltplab.base.stats import BATCH

MATERIAL_SHARE = 0.1
# A window shorter than this holds too few seconds for a line through them to mean much.
MIN_WINDOW_SECONDS = 4 * BATCH
# The scales judged: the whole steady part, then its last half and its last quarter.
SCALES = (1, 2, 4)


@dataclass(frozen=True)
class StateSignal:
    name: str  # as a reader knows it
    values: np.ndarray  # per second on the sysbench clock, NaN where not sampled
    scale: float | None  # what a change is measured against; None: the signal's own level
    scale_name: str = "its level"
    per_transaction: bool = False  # left behind by transactions: a second's worth the least
    least: np.ndarray | None = None  # per second, the least scale (None: one)


@dataclass(frozen=True)
class Trend:
    signal: str
    change: float  # the fitted line's change across the window, in the signal's units
    scale: float
    scale_name: str
    seconds: int  # the window's length

    @property
    def share(self) -> float:
        return abs(self.change) / self.scale

    def describe(self) -> str:
        way = "rose" if self.change > 0 else "fell"
        return (
            f"{self.signal} {way} by {self.share:.0%} of {self.scale_name} over the last "
            f"{self.seconds} s"
        )


def _fitted_change(values: np.ndarray) -> tuple[float, float]:
    """The fitted line's change across the values, and its standard error. The line is
    fitted to batch means (BATCH seconds each): a level's neighbouring seconds are
    correlated, and a per-second standard error would take a few busy seconds in a row for
    a trend."""
    batches = len(values) // BATCH
    if batches < 3:
        return 0.0, 0.0
    grouped = values[len(values) - batches * BATCH :].reshape(batches, BATCH)
    counts = (~np.isnan(grouped)).sum(axis=1)
    sums = np.nansum(grouped, axis=1)
    means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    centres = (np.arange(batches) * BATCH + BATCH / 2)[~np.isnan(means)]
    known = means[~np.isnan(means)]
    if len(known) < 3 or np.ptp(known) == 0:
        return 0.0, 0.0
    slope, intercept = np.polyfit(centres, known, 1)
    residuals = known - (slope * centres + intercept)
    spread = float(((centres - centres.mean()) ** 2).sum()) ** 0.5
    slope_error = float(residuals.std(ddof=2)) / spread if spread else 0.0
    return float(slope) * len(values), slope_error * len(values)


def trend(signal: StateSignal, start: int, end: int, tps: float) -> Trend | None:
    """The clearest trend of the signal over seconds [start, end) at any of the scales, if
    one counts; `tps` is the transactions a second over the same seconds."""
    window = signal.values[start:end]
    found = None
    for part in SCALES:
        length = len(window) // part
        if length < MIN_WINDOW_SECONDS:
            break
        recent = window[len(window) - length :]
        if np.isnan(recent).all():
            continue
        level = float(np.nanmean(np.abs(recent)))
        least = 1.0
        if signal.per_transaction:
            least = tps
        elif signal.least is not None and not np.isnan(floor := signal.least[start:end]).all():
            least = max(1.0, float(np.nanmean(floor)))
        scale = signal.scale if signal.scale else max(level, least)
        change, error = _fitted_change(recent)
        if abs(change) - 2 * error <= MATERIAL_SHARE * scale:
            continue
        candidate = Trend(signal.name, change, scale, signal.scale_name, length)
        if found is None or candidate.share > found.share:
            found = candidate
    return found


def first_trend(signals: Sequence[StateSignal], start: int, end: int, tps: float) -> Trend | None:
    """The clearest trend among the signals over [start, end), if any counts."""
    trends = [t for s in signals if (t := trend(s, start, end, tps)) is not None]
    return max(trends, key=lambda t: t.share, default=None)


# --- from recorded telemetry --------------------------------------------------------------


@dataclass(frozen=True)
class Capacities:
    """What the engine's levels are measured against, from its variables."""

    pool_pages: float | None = None
    redo_bytes: float | None = None

    @classmethod
    def of(cls, variables: Mapping[str, str]) -> Capacities:
        def number(name: str) -> float | None:
            try:
                return float(variables[name])
            except (KeyError, ValueError):
                return None

        pool, page = number("innodb_buffer_pool_size"), number("innodb_page_size")
        redo = number("innodb_redo_log_capacity")  # MySQL 8.0.30+
        if redo is None and (size := number("innodb_log_file_size")) is not None:
            # MariaDB 10.5+ writes one file; MySQL before 8.0.30 a group of them.
            redo = size * (number("innodb_log_files_in_group") or 1)
        if redo is None:
            # PostgreSQL checkpoints when this much WAL has been written since the last one.
            redo = number("max_wal_size")
        return cls(pool / page if pool and page else None, redo)


def _per_second(points: Sequence[tuple[int, float]], length: int) -> np.ndarray:
    values = np.full(length, np.nan)
    for second, value in points:
        if 0 <= second < length:
            values[second] = value
    return values


def state_signals(
    telemetry: Mapping[tuple[str, str], Sequence[tuple[int, float]]],
    length: int,
    capacities: Capacities = Capacities(),
) -> list[StateSignal]:
    """The engine-state signals a cell's telemetry holds, over its first `length` seconds
    (absent ones are left out: a cell measured without the engine probe has none)."""
    pool = capacities.pool_pages
    if pool is None and metrics.TOTAL_PAGES in telemetry:
        pool = max((v for _, v in telemetry[metrics.TOTAL_PAGES]), default=None)
    if pool is None and metrics.FREE_PAGES in telemetry and metrics.DATA_PAGES in telemetry:
        # The pool's own pages less the few it keeps for itself: near enough for a tenth.
        free, data = dict(telemetry[metrics.FREE_PAGES]), dict(telemetry[metrics.DATA_PAGES])
        pool = max((free[s] + data[s] for s in free.keys() & data.keys()), default=None)
    pool_name = "the buffer pool's pages"
    chosen: list[tuple[tuple[str, str], str, float | None, str, bool]] = [
        (metrics.HISTORY_LENGTH, "history list length", None, "its level", True),
        (
            metrics.CHECKPOINT_AGE,
            "checkpoint age",
            capacities.redo_bytes,
            "the redo capacity",
            False,
        ),
        (metrics.DIRTY_PAGES, "dirty pages", pool, pool_name, False),
        (metrics.FREE_PAGES, "free buffer pool pages", pool, pool_name, False),
        (metrics.DEAD_TUPLES, "dead tuples", None, "their level", True),
    ]
    found = [
        StateSignal(
            name,
            _per_second(telemetry[metric], length),
            scale,
            scale_name if scale else "its level",
            per_transaction,
        )
        for metric, name, scale, scale_name, per_transaction in chosen
        if telemetry.get(metric)
    ]
    written = [
        _per_second(telemetry[m], length) for m in metrics.BUFFERS_WRITTEN if telemetry.get(m)
    ]
    if written:
        # Spread checkpoints make the rate a sawtooth as long as checkpoint_timeout: a window
        # shows no trend in it only once it holds several checkpoints.
        found.append(StateSignal("buffers written a second", np.sum(written, axis=0), None))
    running = _per_second(telemetry.get(metrics.THREADS_RUNNING, ()), length)
    found += [
        StateSignal(metric[1].replace("_", " "), _per_second(telemetry[metric], length), None,
                    least=running)
        for metric in sorted(telemetry)
        if metrics.is_pending(metric) and telemetry[metric]
    ]  # fmt: skip
    return found
