"""Same within a margin, or not: two one-sided tests (TOST) on a ratio's interval.

"Not significant" never means "the same": a wide interval is not significant either. Two
figures are *equivalent* within +-margin when the 90% interval of their difference lies
inside (-margin, +margin) (TOST at the 5% level); they *differ* when it lies wholly outside
it; otherwise the measurement is *undecided*, and the interval's width says about how many
repetitions would decide: enough for its half-width to fall under half the margin. The
spread is taken from the interval with its own t quantile, and the half-width at a larger
count uses that count's: with 3 repetitions, t(2) alone widens an interval 1.8 times over
its large-sample width, which a count scaled by width squared would take for spread. That
depends on the spread alone, not on where the point happens to lie, so it grows as the
margin narrows and stays put as rounds accumulate at the same spread.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from oltplab.analysis.estimate import Comparison, PointSample, compare, t_quantile

TOST_CONFIDENCE = 0.90
EQUIVALENT = "equivalent"
DIFFERENT = "different"
UNDECIDED = "undecided"


@dataclass(frozen=True)
class Equivalence:
    comparison: Comparison  # a against b, with its 90% interval
    margin_pct: float
    verdict: str  # EQUIVALENT, DIFFERENT or UNDECIDED
    needed: int | None  # repetitions that would likely decide an undecided one

    def describe(self, same: str = "same", changed: str = "changed") -> str:
        """`same within 3%`, `changed`, or `undecided: ...`, always with the interval."""
        shown = self.comparison.with_interval()
        if self.verdict == EQUIVALENT:
            return f"{same} within {self.margin_pct:g}%: {shown}"
        if self.verdict == DIFFERENT:
            return f"{changed}: {shown}, beyond ±{self.margin_pct:g}%"
        more = f" (about {self.needed} repetitions would decide)" if self.needed else ""
        margin = f"{self.margin_pct:g}%"
        return f"undecided: the interval is wider than the margin of {margin}: {shown}{more}"


def judge(comparison: Comparison, margin_pct: float) -> Equivalence:
    """What a 90% interval says against +-margin."""
    low, high = comparison.low_pct, comparison.high_pct
    if low is None or high is None:
        return Equivalence(comparison, margin_pct, UNDECIDED, None)
    if -margin_pct < low and high < margin_pct:
        return Equivalence(comparison, margin_pct, EQUIVALENT, None)
    if low >= margin_pct or high <= -margin_pct:
        return Equivalence(comparison, margin_pct, DIFFERENT, None)
    return Equivalence(comparison, margin_pct, UNDECIDED, _needed(comparison, margin_pct))


def _needed(comparison: Comparison, margin_pct: float) -> int | None:
    """Repetitions for the interval's half-width to fall under half the margin: then no
    difference is decided the same and one of twice the margin different. None for an
    interval over one run's seconds (more repetitions are another kind of interval) or
    one already that narrow (its point lies too near the margin for more to settle it)."""
    assert comparison.low_pct is not None and comparison.high_pct is not None
    half = (comparison.high_pct - comparison.low_pct) / 2
    target = margin_pct / 2
    n = comparison.n
    if not comparison.over_repetitions or half <= target or n < 2:
        return None
    # Degrees of freedom at a count: paired rounds give one difference each; independent
    # sides two means each (Welch's, at equal spreads), as compare() reckoned them.
    paired = "paired" in comparison.estimate.method

    def df(count: int) -> int:
        return count - 1 if paired else 2 * (count - 1)

    # The spread of one repetition: the half-width without its t quantile and its count.
    spread = half / t_quantile(TOST_CONFIDENCE, df(n)) * math.sqrt(n)

    def narrow_enough(count: int) -> bool:
        return t_quantile(TOST_CONFIDENCE, df(count)) * spread / math.sqrt(count) <= target

    high = n + 1
    while not narrow_enough(high):
        high *= 2
    low = high // 2 if high > n + 1 else n + 1  # narrow_enough(high) holds; low may not
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if narrow_enough(middle) else (middle + 1, high)
    return high


def equivalence(
    a: PointSample, b: PointSample, margin_pct: float, *, paired: bool, label: str = ""
) -> Equivalence:
    return judge(compare(a, b, paired=paired, label=label, confidence=TOST_CONFIDENCE), margin_pct)
