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

import math
from dataclasses import dataclass

import numpy as np

from oltplab.analysis.equivalence import DIFFERENT as BEYOND
from oltplab.analysis.equivalence import EQUIVALENT, TOST_CONFIDENCE, judge
from oltplab.analysis.estimate import Comparison, PointSample, compare, t_quantile
from oltplab.analysis.points import Point, Points
from oltplab.base.metrics import Measure, Target
from oltplab.base.wording import counted

DIFFERENT = "DIFFERENT"
SAME = "SAME"
UNKNOWN = "UNKNOWN"
# With few rounds the spread of the ratios is itself a guess, and a guess that is small by
# luck makes the interval narrow: an A/A pair looked at after every round from the third
# ended DIFFERENT in 1.4% of simulated runs, from the fourth in 0.5% (tests/fast/
# test_precision.py). A comparison is judged from the fourth round on.
MIN_ROUNDS = 4


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

    def describe(self) -> str:
        """The verdict as the run prints it and its report leads with it: `mariadb-11.4.5
        vs mariadb-10.11.5 (ro-local, 128M, 4 threads): UNKNOWN -10.2% [-29.4, +9.4] (90%)
        after 6 rounds`."""
        shown = f" {self.comparison.with_interval()}" if self.comparison else ""
        return f"{self.label}: {self.verdict}{shown} after {self.rounds} rounds"

    @property
    def label(self) -> str:
        """`mariadb-11.4.5 vs mariadb-10.11.5 (ro-local, 128M, 4 threads)`"""
        pairs = list(zip(self.a, self.b, strict=True))
        changed = next(((x, y) for x, y in pairs if x != y), (self.a, self.b))
        common = [_shown(x) for x, y in pairs if x == y]
        return f"{changed[0]} vs {changed[1]} ({', '.join(common)})"


def _shown(part: object) -> str:
    if isinstance(part, int):
        return counted(part, "thread")
    return str(part)


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
    return pairs


def trimmed_rounds(sample: PointSample, trim: float) -> PointSample:
    """Each round as one figure: the mean of its steady seconds with `trim` of them left
    out at each end (unweighted: a per-transaction measure's second counts as one). At
    one thread this host's speed now and then jumps threefold for a second or two: a
    round's mean follows such a jump, its trimmed mean hardly moves; without one the
    trimmed mean wastes seconds. bench/precision.py replays the rule both ways."""
    from scipy import stats  # loaded by the first interval, not by every command

    return PointSample(
        {r: np.array([stats.trim_mean(values, trim)]) for r, values in sample.series.items()}
    )


def first_rounds(sample: PointSample, rounds: int) -> PointSample:
    """The sample as it stood after its first `rounds` repetitions."""
    kept = {r: s for r, s in sample.series.items() if r <= rounds}
    if sample.weights is None:
        return PointSample(kept)
    return PointSample(kept, {r: w for r, w in sample.weights.items() if r <= rounds})


def answers(
    points: Points, target: Target, up_to: int | None = None, trim: float = 0.0
) -> list[Answer]:
    """Each compared pair's verdict on the target's measure (points must be of it); with
    `up_to`, as it stood after that many rounds (to replay the rule on recorded rounds);
    with `trim`, each round by its trimmed mean."""
    samples = points.samples()
    if up_to is not None:
        samples = {point: first_rounds(sample, up_to) for point, sample in samples.items()}
    found = []
    for a, b in compared_pairs(points):
        rounds = len(samples[a].series.keys() & samples[b].series.keys())
        if rounds == 0:
            continue
        comparison, verdict = decide(
            samples[a], samples[b], target.margin_pct, points.dataset.paired, f"{a}|{b}", trim
        )
        found.append(Answer(a, b, target.measure, comparison, verdict, rounds, target.margin_pct))
    return found


def decide(
    a: PointSample,
    b: PointSample,
    margin_pct: float,
    paired: bool,
    label: str = "",
    trim: float = 0.0,
) -> tuple[Comparison, str]:
    """a against b on its 90% interval (each round by its trimmed mean when `trim`), and
    the verdict against +-margin_pct (UNKNOWN before MIN_ROUNDS rounds)."""
    if trim:
        a, b = trimmed_rounds(a, trim), trimmed_rounds(b, trim)
    comparison = compare(a, b, paired=paired, label=label, confidence=TOST_CONFIDENCE)
    if len(a.series.keys() & b.series.keys()) < MIN_ROUNDS:
        return comparison, UNKNOWN
    judged = judge(comparison, margin_pct).verdict
    return comparison, {EQUIVALENT: SAME, BEYOND: DIFFERENT}.get(judged, UNKNOWN)


def round_spread_pct(a: PointSample, b: PointSample) -> float | None:
    """The standard deviation, in percent, of the log ratio of a to b round by round: what
    one more paired round adds to a comparison's uncertainty on this host."""
    rounds = sorted(a.series.keys() & b.series.keys())
    if len(rounds) < 2:
        return None
    logs = np.log([a.rep_mean(r) / b.rep_mean(r) for r in rounds])
    return float(logs.std(ddof=1)) * 100


def rounds_needed(spread_pct: float, half_width_pct: float, most: int = 10_000) -> int | None:
    """Paired rounds for the 90% interval's half-width to fall under half_width_pct, for a
    comparison whose rounds spread this much (at least MIN_ROUNDS); None beyond `most`."""
    for rounds in range(MIN_ROUNDS, most + 1):
        if (
            t_quantile(TOST_CONFIDENCE, rounds - 1) * spread_pct / math.sqrt(rounds)
            < half_width_pct
        ):
            return rounds
    return None


# The one-sided normal quantile of 80% power.
Z_POWER80 = 0.8416


def smallest_decided(spread_pct: float, margin_pct: float, rounds: int) -> float:
    """The smallest true difference that `rounds` paired rounds of this spread decide
    DIFFERENT at the margin four times in five: its lower bound must clear the margin,
    margin + (t + z80) * spread / sqrt(rounds) (one look; a search that looks after each
    batch decides a little more often)."""
    t = t_quantile(TOST_CONFIDENCE, max(rounds, MIN_ROUNDS) - 1)
    return margin_pct + (t + Z_POWER80) * spread_pct / math.sqrt(max(rounds, MIN_ROUNDS))


def rounds_to_decide(
    spread_pct: float, margin_pct: float, difference_pct: float, most: int = 10_000
) -> int | None:
    """Paired rounds for a true difference of this size to be decided DIFFERENT at the
    margin four times in five; None beyond `most` (or when it is within the margin)."""
    for rounds in range(MIN_ROUNDS, most + 1):
        if smallest_decided(spread_pct, margin_pct, rounds) <= difference_pct:
            return rounds
    return None
