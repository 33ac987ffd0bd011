"""What the telemetry says about a cell: per-operation figures and timelines.

Per-operation figures (the way MySQL regression studies explain a slowdown) are totals over
the cell's steady seconds, the same seconds its TPS is judged on, divided by the
transactions sysbench counted in them:
- CPU microseconds per transaction: the server process's user + system time (all threads);
- context switches per transaction: the host's (vmstat cs), sysbench's included;
- KB read and written per transaction: the host's disks (iostat);
- redo bytes per transaction: Innodb_os_log_written (PostgreSQL: pg_stat_wal.wal_bytes).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import mean
from typing import Any

from oltplab.analysis.dataset import CellRecord, Dataset
from oltplab.analysis.points import Points
from oltplab.base import metrics
from oltplab.base.metrics import Metric
from oltplab.base.stats import jitter, stalls
from oltplab.base.wording import counted
from oltplab.telemetry.load import DISTURBED_CPU

Series = list[tuple[int, float]]

# --- per-operation figures ---------------------------------------------------------------------


@dataclass(frozen=True)
class PerOperation:
    cpu_us: float | None
    context_switches: float | None
    kb_read: float | None
    kb_written: float | None
    redo_bytes: float | None


def _steady_seconds(points: Points, cell: CellRecord) -> range | None:
    found = points.cuts.get(cell.key)
    if found is None:
        return None
    return range(found.steady_from, len(points.dataset.series[cell.key]) + 1)


def _total(
    series: dict[tuple[str, str], Series], seconds: range, match: Callable[[Metric], bool]
) -> float | None:
    chosen = [values for metric, values in series.items() if match(Metric(*metric))]
    if not chosen:
        return None
    return sum(v for values in chosen for s, v in values if s in seconds)


def per_operation(points: Points, cell: CellRecord) -> PerOperation | None:
    dataset = points.dataset
    series = dataset.telemetry.get(cell.key)
    seconds = _steady_seconds(points, cell)
    if not series or seconds is None or not cell.measured:
        return None
    tps = dataset.series[cell.key]
    transactions = sum(tps[s - 1] for s in seconds)
    if transactions <= 0:
        return None

    def per_txn(match: Callable[[Metric], bool], scale: float = 1.0) -> float | None:
        total = _total(series, seconds, match)
        return None if total is None else total * scale / transactions

    return PerOperation(
        cpu_us=per_txn(lambda m: m in metrics.SERVER_CPU_ANY, 1e6),
        context_switches=per_txn(lambda m: m == metrics.CONTEXT_SWITCHES),
        kb_read=per_txn(lambda m: metrics.is_disk(m, metrics.DISK_READ_COLUMN), 1024),
        kb_written=per_txn(lambda m: metrics.is_disk(m, metrics.DISK_WRITTEN_COLUMN), 1024),
        redo_bytes=per_txn(lambda m: m in metrics.REDO_BYTES),
    )


@dataclass(frozen=True)
class OperationRow:
    scenario: str
    tier: str
    engine: str
    workload: str
    threads: int
    runs: int
    tps: float
    figures: PerOperation

    def as_dict(self, digits: int, suffix: str = "") -> dict[str, Any]:
        """The row as plain data, figures rounded and named with the suffix."""
        return {
            "scenario": self.scenario,
            "tier": self.tier,
            "workload": self.workload,
            "engine": self.engine,
            "threads": self.threads,
            "runs": self.runs,
            "tps": round(self.tps, 2),
            **{
                f"{name}{suffix}": None if value is None else round(value, digits)
                for name, value in vars(self.figures).items()
            },
        }


def _averaged(found: list[PerOperation]) -> PerOperation:
    def average(name: str) -> float | None:
        values = [getattr(f, name) for f in found if getattr(f, name) is not None]
        return mean(values) if values else None

    return PerOperation(
        average("cpu_us"),
        average("context_switches"),
        average("kb_read"),
        average("kb_written"),
        average("redo_bytes"),
    )


def operation_table(points: Points) -> list[OperationRow]:
    """Per-operation figures by point, averaged over repetitions."""
    dataset = points.dataset
    grouped: dict[tuple[str, str, str, str, int], list[tuple[CellRecord, PerOperation]]] = (
        defaultdict(list)
    )
    for cell in dataset.cells:
        figures = per_operation(points, cell)
        if figures is not None and cell.tps is not None:
            point = (cell.scenario, cell.tier, cell.engine, cell.workload, cell.threads)
            grouped[point].append((cell, figures))
    rows = []
    for (scenario, tier, engine, workload, threads), found in grouped.items():
        figures = _averaged([f for _, f in found])
        tps = mean(c.tps for c, _ in found if c.tps is not None)
        rows.append(
            OperationRow(scenario, tier, engine, workload, threads, len(found), tps, figures)
        )
    order = {name: index for index, name in enumerate(dataset.engine_names())}
    rows.sort(
        key=lambda r: (
            r.scenario,
            dataset.tiers().index(r.tier),
            r.workload,
            order[r.engine],
            r.threads,
        )
    )
    return rows


# --- timelines -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Panel:
    title: str
    lines: dict[str, list[float | None]]


@dataclass(frozen=True)
class Timeline:
    cell: CellRecord
    seconds: list[int]
    tps: list[float]
    panels: list[Panel]
    stalls: list[tuple[int, int]]
    steady_from: int = 1  # the first second counted, 1-based
    # Open loop: runs of seconds in which transactions offered waited in sysbench's queue
    # (the server fell behind; their latency counts the wait).
    waits: list[tuple[int, int]] = field(default_factory=list)
    # Runs of seconds in which other load and steal took at least DISTURBED_CPU of a CPU.
    disturbed: list[tuple[int, int]] = field(default_factory=list)

    @property
    def label(self) -> str:
        c = self.cell
        run = f", run {c.repetition}" if c.repetition > 1 else ""
        return f"{c.engine} {c.scenario} {c.tier} {c.workload} {counted(c.threads, 'thread')}{run}"


def _on(seconds: list[int], values: Series, scale: float = 1.0) -> list[float | None]:
    by_second = dict(values)
    return [by_second[s] * scale if s in by_second else None for s in seconds]


def _disk_total(series: dict[tuple[str, str], Series], column: str) -> Series:
    """The column summed over the host's devices."""
    totals: dict[int, float] = defaultdict(float)
    for metric, values in series.items():
        if metrics.is_disk(metric, column):
            for second, value in values:
                totals[second] += value
    return sorted(totals.items())


def timeline(points: Points, cell: CellRecord) -> Timeline | None:
    """TPS with CPU, disk, threads running, history length, checkpoint age and dirty pages."""
    dataset = points.dataset
    series = dataset.telemetry.get(cell.key)
    tps = dataset.series.get(cell.key)
    if not series or tps is None or not len(tps):
        return None
    seconds = list(range(1, len(tps) + 1))

    def get(metric: Metric) -> Series:
        return series.get(metric, [])

    panels = [
        Panel(
            "CPUs used",
            {
                "server": _on(seconds, _either(series, metrics.SERVER_CPU_ANY)),
                "sysbench": _on(seconds, get(metrics.SYSBENCH_CPU)),
                "other load": _on(seconds, get(metrics.OTHER_CPU)),
                "steal": _on(seconds, get(metrics.STEAL)),
            },
        ),
        Panel(
            "CPU %",
            {
                "user": _on(seconds, get(metrics.CPU_USER)),
                "system": _on(seconds, get(metrics.CPU_SYSTEM)),
                "iowait": _on(seconds, get(metrics.CPU_IOWAIT)),
            },
        ),
        Panel(
            "Disk MB/s",
            {
                "read": _on(seconds, _disk_total(series, metrics.DISK_READ_COLUMN)),
                "written": _on(seconds, _disk_total(series, metrics.DISK_WRITTEN_COLUMN)),
            },
        ),
        Panel("Threads running", {"threads": _on(seconds, get(metrics.THREADS_RUNNING))}),
        Panel("History list length", {"length": _on(seconds, get(metrics.HISTORY_LENGTH))}),
        Panel("Checkpoint age MB", {"age": _on(seconds, get(metrics.CHECKPOINT_AGE), 1 / 2**20)}),
        Panel("Dirty pages", {"pages": _on(seconds, get(metrics.DIRTY_PAGES))}),
        Panel(
            "Queue (open loop)",
            {
                "waiting": _on(seconds, get(metrics.QUEUE_LENGTH)),
                "busy threads": _on(seconds, get(metrics.CONCURRENCY)),
            },
        ),
    ]
    panels = [p for p in panels if any(v is not None for line in p.lines.values() for v in line)]
    found = points.cuts.get(cell.key)
    steady_from = found.steady_from if found else 1
    waiting = [second for second, value in get(metrics.QUEUE_LENGTH) if value > 0]
    steal = dict(get(metrics.STEAL))
    disturbed = [
        second
        for second, other in get(metrics.OTHER_CPU)
        if other + steal.get(second, 0.0) >= DISTURBED_CPU
    ]
    return Timeline(
        cell,
        seconds,
        tps.tolist(),
        panels,
        stalls(tps),
        steady_from,
        _runs(waiting),
        _runs([s for s in disturbed if 1 <= s <= len(tps)]),
    )


def _either(series: dict[tuple[str, str], Series], choices: frozenset[Metric]) -> Series:
    """The first of several names one series has had."""
    return next((series[m] for m in choices if m in series), [])


def _runs(seconds: list[int]) -> list[tuple[int, int]]:
    """Consecutive seconds as (first, last) runs."""
    out: list[tuple[int, int]] = []
    for second in sorted(seconds):
        if out and second == out[-1][1] + 1:
            out[-1] = (out[-1][0], second)
        else:
            out.append((second, second))
    return out


def notable_cells(dataset: Dataset) -> list[tuple[str, CellRecord]]:
    """The slowest cell (lowest TPS) and the most unstable one (highest per-second CV)."""
    candidates = [
        c
        for c in dataset.cells
        if c.measured and c.key in dataset.telemetry and c.key in dataset.series
    ]
    if not candidates:
        return []
    slowest = min(candidates, key=lambda c: c.tps or 0.0)
    unstable = max(candidates, key=lambda c: jitter(dataset.series[c.key]) or 0.0)
    return [("slowest", slowest), ("most unstable", unstable)]
