"""A cell's telemetry files and series: raw files kept next to the sysbench output, read
into per-second series on the sysbench clock (when the cell ran, and again when a ledger
is rebuilt)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from oltplab.base import metrics
from oltplab.telemetry.parsers import Values

Row = tuple[str, str, int, float]  # source, metric, second, value


@dataclass(frozen=True)
class TelemetryClock:
    """Where a cell's raw telemetry files sit on the sysbench clock: enough to read them
    again into the same series (the journal keeps it, `oltplab rebuild` uses it)."""

    start_clock: float  # sysbench's start, seconds after local midnight
    started_after: float  # the collectors' start, seconds after sysbench's (negative: before)
    duration: int  # seconds sysbench ran
    sources: tuple[str, ...]  # the collectors that ran, and the engine probe


@dataclass
class Collected:
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gap: bool = False
    clock: TelemetryClock | None = None

    def missing(self, note: str) -> None:
        self.notes.append(note)
        self.gap = True


def seconds_of_day(moment: float) -> float:
    local = datetime.fromtimestamp(moment)
    return local.hour * 3600 + local.minute * 60 + local.second + local.microsecond / 1e6


def to_rows(
    source: str, series: list[tuple[int, Values]], levels: frozenset[str] = frozenset()
) -> list[Row]:
    """Long rows, without the metrics that stayed at zero the whole time (idle devices,
    counters of statements the workload never runs). The named levels are kept: no thread
    running at any sample is an observation, not an absence."""
    moving = {name for _, values in series for name, value in values.items() if value != 0}
    return [
        (source, name, second, value)
        for second, values in series
        for name, value in values.items()
        if name in moving or name in levels
    ]


def within_run(series: list[tuple[int, Values]], clock: TelemetryClock) -> list[tuple[int, Values]]:
    """The run's seconds only: samples after it, taken while waiting for the last one,
    describe an idle engine."""
    return [(second, values) for second, values in series if 0 <= second <= clock.duration + 1]


def missing_seconds(seconds: set[int], duration: int) -> list[int]:
    """Seconds of the run with no sample; the first and last may fall either side of
    the run by rounding and are not required."""
    return [s for s in range(2, duration) if s not in seconds]


def describe_seconds(seconds: list[int]) -> str:
    if not seconds:
        return ""
    if len(seconds) == seconds[-1] - seconds[0] + 1:
        return f"{seconds[0]}-{seconds[-1]} s" if len(seconds) > 1 else f"{seconds[0]} s"
    return f"{len(seconds)} s between {seconds[0]} and {seconds[-1]} s"


def queue_rows(queue: np.ndarray) -> list[tuple[str, str, int, float]]:
    """sysbench's rate-mode queue lines as telemetry rows on its own clock."""
    rows = []
    for second, length, busy in queue.tolist():
        rows.append((metrics.QUEUE_LENGTH.source, metrics.QUEUE_LENGTH.name, round(second), length))
        rows.append((metrics.CONCURRENCY.source, metrics.CONCURRENCY.name, round(second), busy))
    return rows
