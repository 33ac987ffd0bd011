"""Where it changed: change points along each family's releases, per scenario, tier and
thread count (and, for nightly runs, along one engine's results over time).

A series is ordered (releases oldest first; results directories by when they ran) and
each of its points gives one value per repetition, the steady TPS of that run; a change
lies between two points, and its size is the steady comparison of the first changed point
against the last good one, with its interval.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from oltplab.analysis.changepoints import change_points
from oltplab.analysis.comparability import alike_notes, unlike
from oltplab.analysis.dataset import load
from oltplab.analysis.estimate import Comparison, Estimate, PointSample, compare, mean_estimate
from oltplab.analysis.points import Points
from oltplab.base.asking import argument, measure_option, output_option, required
from oltplab.base.errors import OltplabError
from oltplab.base.given import measure_of
from oltplab.base.metrics import TPS, Measure
from oltplab.base.telling import Rows, Told
from oltplab.base.wording import counted, report_hint
from oltplab.spec.catalog import UNKNOWN_FAMILY
from oltplab.store.ledger import Ledger

# Points a series needs before a change point can be looked for: one each side and one more.
MIN_POINTS = 3
# A repetition that stands apart from its point's others. Few repetitions: Dixon's Q test
# (its gap to the nearest value over the range), at the 95% critical values of Rorabacher
# ("Statistical Treatment for Rejection of Deviant Values", Anal. Chem. 1991). More: the
# modified z-score rule of Iglewicz and Hoaglin (1993), a distance from the median above
# 3.5 robust standard deviations (MAD / 0.6745; the mean absolute deviation / 0.7979 where
# the MAD is 0). Published constants, fitted to no data of ours.
DIXON_Q95 = {3: 0.970, 4: 0.829, 5: 0.710, 6: 0.625, 7: 0.568, 8: 0.526, 9: 0.493, 10: 0.466}
OUTLIER_Z = 3.5
MAD_TO_SD = 0.6745
MEAN_AD_TO_SD = 0.7979
# Repetitions a point needs before one can be told apart from the others.
MIN_REPETITIONS = 3


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


def changes_along(
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


@dataclass(frozen=True)
class Disagreement:
    """A repetition of one release that its other repetitions disagree with: a change
    point there would rest on it."""

    release: str
    repetition: int
    value: float
    others: tuple[float, float]  # the lowest and highest of the other repetitions
    measure: Measure


@dataclass(frozen=True)
class Outlier:
    repetition: int
    value: float  # its mean
    others: tuple[float, float]  # the lowest and highest mean of the other repetitions


def outlying_repetitions(sample: PointSample) -> list[Outlier]:
    """The repetitions whose mean stands apart from the point's others."""
    if sample.reps < MIN_REPETITIONS:
        return []
    means = dict(zip(sorted(sample.series), (float(m) for m in sample.rep_means), strict=True))
    values = np.array(list(means.values()))
    apart = _dixon(values) if len(values) in DIXON_Q95 else _modified_z(values)
    found = []
    for (repetition, mean), out in zip(means.items(), apart, strict=True):
        if out:
            rest = [m for r, m in means.items() if r != repetition]
            found.append(Outlier(repetition, mean, (min(rest), max(rest))))
    return found


def _dixon(values: np.ndarray) -> np.ndarray:
    ordered = np.sort(values)
    spread = ordered[-1] - ordered[0]
    apart = np.zeros(len(values), dtype=bool)
    if spread == 0:
        return apart
    critical = DIXON_Q95[len(values)]
    if (ordered[1] - ordered[0]) / spread > critical:
        apart |= values == ordered[0]
    if (ordered[-1] - ordered[-2]) / spread > critical:
        apart |= values == ordered[-1]
    return apart


def _modified_z(values: np.ndarray) -> np.ndarray:
    distance = np.abs(values - np.median(values))
    spread = float(np.median(distance)) / MAD_TO_SD or float(distance.mean()) / MEAN_AD_TO_SD
    if spread == 0:
        return np.zeros(len(values), dtype=bool)
    return distance / spread > OUTLIER_Z


@dataclass(frozen=True)
class ReleaseSeries:
    """One family's releases, oldest first, at one scenario, tier and thread count: what a
    chart by release draws, with the change points found along it."""

    family: str
    scenario: str
    tier: str
    threads: int
    releases: list[str]  # engines
    values: list[Estimate]  # steady TPS of each release, with its interval
    changes: list[Change]
    neighbours: list[Comparison]  # each release against the one before it
    disagreements: list[Disagreement]

    @property
    def changed_at(self) -> list[int]:
        """Where each change's first changed release is in `releases`."""
        return [self.releases.index(c.first_changed) for c in self.changes]


def release_series(points: Points) -> list[ReleaseSeries]:
    """Every family of two or more releases, along each scenario, tier and thread count,
    with the change points of those of three or more releases."""
    dataset = points.dataset
    samples = points.samples()
    families: dict[str, list[str]] = defaultdict(list)
    for engine in dataset.engine_names():
        family = dataset.engines[engine].family
        if family and family != UNKNOWN_FAMILY:
            families[family].append(engine)
    out = []
    for family, engines in families.items():
        for scenario in dataset.scenarios:
            for tier in dataset.tiers(scenario):
                for threads in dataset.threads(scenario, tier):
                    present = [e for e in engines if (scenario, tier, e, threads) in samples]
                    if len(present) < 2:
                        continue
                    found = [samples[(scenario, tier, e, threads)] for e in present]
                    key = (scenario, tier, threads)
                    changes = []
                    if len(found) >= MIN_POINTS:
                        for _, change in changes_along(family, key, present, found):
                            size = points.comparison(
                                (scenario, tier, change.first_changed, threads),
                                (scenario, tier, change.last_good, threads),
                            )
                            changes.append(_with_size(change, size))
                    steps = itertools.pairwise(found)
                    out.append(ReleaseSeries(
                        family, scenario, tier, threads, present,
                        [mean_estimate(sample) for sample in found], changes,
                        [compare(after, before) for before, after in steps],
                        _disagreements(present, found, points.measure),
                    ))  # fmt: skip
    return out


def _disagreements(
    releases: list[str], samples: list[PointSample], measure: Measure
) -> list[Disagreement]:
    out = []
    for release, sample in zip(releases, samples, strict=True):
        for found in outlying_repetitions(sample):
            out.append(Disagreement(release, found.repetition, found.value, found.others, measure))
    return out


def disagreement_sentences(series: list[ReleaseSeries]) -> list[str]:
    """What "Where it changed" says of releases whose repetitions disagree."""
    out = []
    for one in series:
        for found in one.disagreements:
            low, high = (found.measure.format(v) for v in found.others)
            out.append(
                f"The repetitions of {found.release} disagree ({one.scenario}, {one.tier}, "
                f"{counted(one.threads, 'thread')}): repetition "
                f"{found.repetition} gave {found.measure.format(found.value)} "
                f"{found.measure.unit}, the others {low} to {high}. A change at "
                f"{found.release} would rest on that one repetition: measure it again "
                "(`oltplab rerun`) before reading a change there."
            )
    return out


def version_changes(series: list[ReleaseSeries]) -> list[Change]:
    """Change points along every family of three or more releases, each with its size."""
    return [change for found in series for change in found.changes]


def smallest_detectable_pct(series: list[ReleaseSeries]) -> float | None:
    """The smallest change between neighbouring releases this data could show: the median
    half-width of their comparisons' intervals (None when none has an interval)."""
    widths = sorted(
        (c.high_pct - c.low_pct) / 2
        for found in series
        for c in found.neighbours
        if c.low_pct is not None and c.high_pct is not None
    )
    return widths[len(widths) // 2] if widths else None


def no_change_sentences(series: list[ReleaseSeries]) -> list[str]:
    """What "Where it changed" says of the families without a change point."""
    if not series:
        return [
            "No family has two or more releases in these results: there is nothing to place "
            "a change between."
        ]
    families: dict[str, list[ReleaseSeries]] = defaultdict(list)
    for one in series:
        families[one.family].append(one)
    out = []
    for family, found in families.items():
        releases = len({e for s in found for e in s.releases})
        if releases < MIN_POINTS:
            out.append(
                f"{family}: {releases} releases; a change point needs at least {MIN_POINTS} (a "
                "release each side of it and one more)."
            )
        elif not any(s.changes for s in found):
            smallest = smallest_detectable_pct(found)
            could = (
                f"the smallest change this data could show is about {smallest:.1f}%"
                if smallest is not None
                else "no two neighbouring releases have an interval, so this data cannot say "
                "how large a change it could show"
            )
            out.append(f"No change point among the {releases} releases of {family}; {could}.")
    return out


def _with_size(change: Change, size: Comparison | None) -> Change:
    return Change(**{**change.__dict__, "size": size})


def started(results: Path) -> str:
    """When a results directory's first run began (ISO 8601): what orders a history."""
    ledger = Ledger.open(results, create=False)
    try:
        runs = ledger.runs()
    finally:
        ledger.close()
    return runs[0].started_at if runs else ""


def history_changes(
    results: list[Path], engine: str, measure: Measure = TPS
) -> tuple[list[Path], list[Change]]:
    """One engine's results over time, one results directory a point (in the order they
    ran): the directories in that order, and the change points of every cell group."""
    if len(results) < MIN_POINTS:
        raise OltplabError(
            f"history: {len(results)} results directories given; a change point needs at "
            f"least {MIN_POINTS} (one each side of it and one more); pass that many, in any order"
        )
    seen: dict[Path, Path] = {}
    for path in results:
        if (first := seen.setdefault(path.resolve(), path)) is not path:
            raise OltplabError(
                f"history: {path} given twice (also as {first}); each results directory is "
                "one point in time: pass each once"
            )
    ordered = sorted(results, key=started)
    per_dir = []
    for path in ordered:
        points = Points(load([path]), measure=measure)
        if engine not in points.dataset.engines:
            raise OltplabError(f"{path}: has no engine {engine} (--engine)")
        per_dir.append(points)
    return ordered, changes_over(ordered, per_dir, engine)


@dataclass(frozen=True, kw_only=True)
class HistoryAsked:
    results: list[Path] = argument("Results directories of the same engine over time.", "RESULTS")
    engine: str = required("The engine to follow.")
    measure: str = measure_option()


def history_followed(asked: HistoryAsked) -> Told:
    """The results directories in the order they ran, and where the engine changed along
    them (or that it did not)."""
    engine = asked.engine
    ordered, changes = history_changes(asked.results, engine, measure_of(asked.measure))
    # A change between two that were not measured alike may be the setup's, not the engine's.
    notes = alike_notes(unlike(ordered, refuse=False))
    listed = f"{engine} in {len(ordered)} results directories, oldest first: " + ", ".join(
        str(p) for p in ordered
    )
    columns = ("scenario", "tier", "threads", "last good", "first changed", "size")
    rows = tuple(
        (c.scenario, c.tier, str(c.threads), c.last_good, c.first_changed,
         "-" if c.size is None else c.size.change())
        for c in changes
    )  # fmt: skip
    found = (
        Rows(f"Where {engine} changed", columns, rows, folded=columns)
        if changes
        else "no change point (E-Divisive means, Hunter's t-test, p below 0.001)"
    )
    return Told((*notes, listed, found), report_hint(ordered))


# `oltplab site`'s options are declared here rather than in report/site.py: the report
# package loads Matplotlib when imported, and a command's options are bound as the command
# line starts.
@dataclass(frozen=True, kw_only=True)
class SiteAsked:
    results: list[Path] = argument(
        "Results directories (nightly runs, shards, imports), in any order.", "RESULTS"
    )
    output: Path = output_option("The site's folder.", dataclasses.MISSING)


def changes_over(ordered: list[Path], per_dir: list[Points], engine: str) -> list[Change]:
    """The change points of every cell group of one engine, over results directories
    already loaded, one a point in time, in the order they ran."""
    keys = sorted({(s, t, n) for p in per_dir for (s, t, e, n) in p.samples() if e == engine})
    out = []
    for scenario, tier, threads in keys:
        point = (scenario, tier, engine, threads)
        present = [(path, p) for path, p in zip(ordered, per_dir, strict=True)
                   if point in p.samples()]  # fmt: skip
        if len(present) < MIN_POINTS:
            continue
        names = [str(path) for path, _ in present]
        samples = [p.samples()[point] for _, p in present]
        for after, change in changes_along(engine, (scenario, tier, threads), names, samples):
            out.append(_with_size(change, _across(samples[after], samples[after - 1])))
    return out


def _across(after: PointSample, before: PointSample) -> Comparison:
    return compare(after, before)
