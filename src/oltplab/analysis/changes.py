"""Where it changed: change points along each family's releases, per scenario, tier and
thread count (and, for nightly runs, along one engine's results over time).

A series is ordered (releases oldest first; results directories by when they ran) and
each of its points gives one value per repetition, the steady TPS of that run; a change
lies between two points, and its size is the steady comparison of the first changed point
against the last good one, with its interval.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from oltplab.analysis.changepoints import change_points
from oltplab.analysis.dataset import load
from oltplab.analysis.estimate import Comparison, PointSample, compare
from oltplab.analysis.points import Points
from oltplab.engines.catalog import UNKNOWN_FAMILY
from oltplab.errors import OltplabError
from oltplab.metrics import TPS, Measure
from oltplab.store.ledger import Ledger


@dataclass(frozen=True)
class Change:
    series: str  # a family, or the engine followed over time
    scenario: str
    tier: str
    threads: int
    last_good: str  # an engine (releases) or a results directory (history)
    first_changed: str
    change_pct: float  # of the means each side of the change point
    pvalue: float
    size: Comparison | None  # first changed against last good, steady, with its interval


def _values(sample: PointSample) -> list[float]:
    return [float(m) for m in sample.rep_means]


def _changes_along(
    label: str, key: tuple[str, str, int], names: list[str], samples: list[PointSample]
) -> list[tuple[int, Change]]:
    values, groups = [], []
    for sample in samples:
        found = _values(sample)
        values += found
        groups.append(len(found))
    out = []
    edges = [sum(groups[:i]) for i in range(len(groups) + 1)]
    for point in change_points(values, groups=groups):
        after = edges.index(point.index)
        change = Change(label, *key, names[after - 1], names[after], point.change_pct,
                        point.pvalue, None)  # fmt: skip
        out.append((after, change))
    return out


def version_changes(points: Points) -> list[Change]:
    """Change points along every family of three or more releases."""
    dataset = points.dataset
    samples = points.samples()
    families: dict[str, list[str]] = defaultdict(list)
    for engine in dataset.engine_names():
        family = dataset.engines[engine].family
        if family and family != UNKNOWN_FAMILY:
            families[family].append(engine)
    out = []
    for family, engines in families.items():
        if len(engines) < 3:
            continue
        for scenario in dataset.scenarios:
            for tier in dataset.tiers(scenario):
                for threads in dataset.threads(scenario, tier):
                    present = [e for e in engines if (scenario, tier, e, threads) in samples]
                    if len(present) < 3:
                        continue
                    found = [samples[(scenario, tier, e, threads)] for e in present]
                    for _, change in _changes_along(
                        family, (scenario, tier, threads), present, found
                    ):
                        size = points.comparison(
                            (scenario, tier, change.first_changed, threads),
                            (scenario, tier, change.last_good, threads),
                        )
                        out.append(_with_size(change, size))
    return out


def _with_size(change: Change, size: Comparison | None) -> Change:
    return Change(**{**change.__dict__, "size": size})


def _started(results: Path) -> str:
    ledger = Ledger.open(results, create=False)
    try:
        runs = ledger.runs()
    finally:
        ledger.close()
    return str(runs[0]["started_at"]) if runs else ""


def history_changes(
    results: list[Path], engine: str, measure: Measure = TPS
) -> tuple[list[Path], list[Change]]:
    """One engine's results over time, one results directory a point (in the order they
    ran): the directories in that order, and the change points of every cell group."""
    ordered = sorted(results, key=_started)
    per_dir = []
    for path in ordered:
        points = Points(load([path]), measure=measure)
        if engine not in points.dataset.engines:
            raise OltplabError(f"{path}: has no engine {engine} (--engine)")
        per_dir.append(points)
    keys = sorted({(s, t, n) for p in per_dir for (s, t, e, n) in p.samples() if e == engine})
    out = []
    for scenario, tier, threads in keys:
        point = (scenario, tier, engine, threads)
        present = [(path, p) for path, p in zip(ordered, per_dir, strict=True)
                   if point in p.samples()]  # fmt: skip
        if len(present) < 3:
            continue
        names = [str(path) for path, _ in present]
        samples = [p.samples()[point] for _, p in present]
        for after, change in _changes_along(engine, (scenario, tier, threads), names, samples):
            out.append(_with_size(change, _across(samples[after], samples[after - 1])))
    return ordered, out


def _across(after: PointSample, before: PointSample) -> Comparison:
    return compare(after, before)
