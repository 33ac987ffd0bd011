"""Is each comparison answered? DIFFERENT, SAME, or UNKNOWN, against a margin.

The comparisons are those a run is made for: each engine against the first engine, each
tier against the first tier, each workload against the first workload, the rest of the
point held fixed. Each is the paired 90% interval of the chosen measure (two one-sided
tests at 5%, as `equivalence` judges): DIFFERENT when the interval lies wholly beyond
+-margin, SAME when it lies wholly inside it, UNKNOWN otherwise. Rounds go on while any is
UNKNOWN, within a budget; an A/A pair can only end DIFFERENT if its interval misses zero
by more than the margin, which is what keeps repeated looks from finding differences in
noise.

The smallest difference a comparison could have told apart is the margin plus its
interval's half-width: a true difference at least that large would have put the whole
interval beyond the margin.
"""

from __future__ import annotations

from dataclasses import dataclass

from oltplab.analysis.equivalence import DIFFERENT as BEYOND
from oltplab.analysis.equivalence import EQUIVALENT, TOST_CONFIDENCE, judge
from oltplab.analysis.estimate import Comparison, compare
from oltplab.analysis.points import Point, Points
from oltplab.metrics import Measure

DIFFERENT = "DIFFERENT"
SAME = "SAME"
UNKNOWN = "UNKNOWN"
# Two rounds give a 90% interval one degree of freedom: two ratios that happen to agree
# make it narrow by luck. A comparison is judged from the third round on.
MIN_ROUNDS = 3


@dataclass(frozen=True)
class Target:
    """What a run measures until: every comparison decided against +-margin_pct, on the
    measure, within budget_seconds of the run's time (None: no limit)."""

    margin_pct: float
    measure: Measure
    budget_seconds: float | None = None


@dataclass(frozen=True)
class Answer:
    a: Point
    b: Point  # the reference it is compared with
    measure: Measure
    comparison: Comparison | None  # a against b, 90% interval; None: not both measured
    verdict: str  # DIFFERENT, SAME or UNKNOWN
    rounds: int
    margin_pct: float

    @property
    def half_width_pct(self) -> float | None:
        c = self.comparison
        if c is None or c.low_pct is None or c.high_pct is None:
            return None
        return (c.high_pct - c.low_pct) / 2

    @property
    def detectable_pct(self) -> float | None:
        """The smallest true difference this interval would have decided DIFFERENT."""
        half = self.half_width_pct
        return None if half is None else self.margin_pct + half

    @property
    def label(self) -> str:
        """`mariadb-11.4.5 vs mariadb-10.11.5 (ro-local, 128M, 4 threads)`"""
        pairs = list(zip(self.a, self.b, strict=True))
        changed = next(((x, y) for x, y in pairs if x != y), (self.a, self.b))
        common = [f"{x} threads" if isinstance(x, int) else str(x) for x, y in pairs if x == y]
        return f"{changed[0]} vs {changed[1]} ({', '.join(common)})"


def compared_pairs(points: Points) -> list[tuple[Point, Point]]:
    """(a, reference) for every engine, tier and workload against the first of its kind.
    A point is (scenario, tier, engine, threads); a workload is its scenario."""
    present = set(points.samples())
    dataset = points.dataset
    engines = dataset.engine_names()
    scenarios = dataset.scenarios
    tiers = dataset.tiers()
    pairs = []
    for scenario, tier, engine, threads in sorted(present):
        for position, first in ((2, engines[0]), (1, tiers[0]), (0, scenarios[0])):
            point = (scenario, tier, engine, threads)
            reference = tuple(first if i == position else v for i, v in enumerate(point))
            if reference != point and reference in present:
                pairs.append((point, reference))
    return pairs  # type: ignore[return-value]


def answers(points: Points, target: Target) -> list[Answer]:
    """Each compared pair's verdict on the target's measure (points must be of it)."""
    samples = points.samples()
    found = []
    for a, b in compared_pairs(points):
        rounds = len(samples[a].series.keys() & samples[b].series.keys())
        comparison = compare(
            samples[a],
            samples[b],
            paired=points.dataset.paired,
            label=f"{a}|{b}",
            confidence=TOST_CONFIDENCE,
        )
        verdict = UNKNOWN
        if rounds >= MIN_ROUNDS:
            judged = judge(comparison, target.margin_pct).verdict
            verdict = {EQUIVALENT: SAME, BEYOND: DIFFERENT}.get(judged, UNKNOWN)
        found.append(Answer(a, b, target.measure, comparison, verdict, rounds, target.margin_pct))
    return found
