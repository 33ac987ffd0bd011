"""Same within a margin, or not: two one-sided tests (TOST) on a ratio's interval.

"Not significant" never means "the same": a wide interval is not significant either. Two
figures are *equivalent* within +-margin when the 90% interval of their difference lies
inside (-margin, +margin) (TOST at the 5% level); they *differ* when it lies wholly outside
it; otherwise the measurement is *undecided*, and the interval's width says about how many
repetitions would decide: enough for its half-width to fall under half the margin,
assuming it narrows as one over the square root of their number. That depends on the
spread alone, not on where the point happens to lie, so it grows as the margin narrows
and stays put as rounds accumulate at the same spread.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from oltplab.analysis.estimate import Comparison, PointSample, compare

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
            return f"{changed}: {shown}, beyond +-{self.margin_pct:g}%"
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
    if not comparison.over_repetitions or half <= target:
        return None
    return max(comparison.n + 1, math.ceil(comparison.n * (half / target) ** 2))


def equivalence(
    a: PointSample, b: PointSample, margin_pct: float, *, paired: bool, label: str = ""
) -> Equivalence:
    return judge(compare(a, b, paired=paired, label=label, confidence=TOST_CONFIDENCE), margin_pct)
