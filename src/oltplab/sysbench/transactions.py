"""What a workload kind measures beyond sysbench's own summary: per transaction type, the
committed ones, the rollbacks the workload asks for, the retries after deadlocks and
serialization failures, the give-ups, the errors by code and a service-time histogram;
metrics of the cell's own (NOPM for the TPC-C-like kind), a per-second series, and what
made the cell's data wrong (a failed consistency condition)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TransactionType:
    name: str
    committed: int = 0
    rollbacks: int = 0  # asked for by the workload (a New-Order's unused item), not errors
    retries: int = 0
    gave_up: int = 0
    errors: tuple[tuple[str, int], ...] = ()  # (MySQL errno or SQLSTATE, count)
    # Service time, at sysbench's own histogram buckets: (ms, transactions), so that the
    # histograms of cells and repetitions merge by adding counts.
    histogram: tuple[tuple[float, int], ...] = ()

    @property
    def ended(self) -> int:
        """Transactions that ended one way or another: the mix's denominator."""
        return self.committed + self.rollbacks + self.gave_up


@dataclass(frozen=True)
class KindResults:
    transactions: tuple[TransactionType, ...] = ()
    # The cell's own figures, by metric name (nopm, ...): stored beside sysbench's summary.
    metrics: dict[str, float] = field(default_factory=dict)
    # (metric, second on the sysbench clock, value): a per-second series.
    series: tuple[tuple[str, int, float], ...] = ()
    # What the kind found wrong with the data after the cell, one line each: the cell is
    # flagged `inconsistent` (sysbench/validity.py) and the lines go to its notes.
    problems: tuple[str, ...] = ()


def merged(parts: Iterable[TransactionType]) -> list[TransactionType]:
    """Transaction types of several threads, seconds or cells, added up type by type."""
    by_name: dict[str, list[TransactionType]] = {}
    for part in parts:
        by_name.setdefault(part.name, []).append(part)
    return [_add(name, same) for name, same in by_name.items()]


def _add(name: str, parts: list[TransactionType]) -> TransactionType:
    errors: dict[str, int] = {}
    histogram: dict[float, int] = {}
    for part in parts:
        for code, count in part.errors:
            errors[code] = errors.get(code, 0) + count
        for value, count in part.histogram:
            histogram[value] = histogram.get(value, 0) + count
    return TransactionType(
        name,
        committed=sum(p.committed for p in parts),
        rollbacks=sum(p.rollbacks for p in parts),
        retries=sum(p.retries for p in parts),
        gave_up=sum(p.gave_up for p in parts),
        errors=tuple(sorted(errors.items())),
        histogram=tuple(sorted(histogram.items())),
    )
