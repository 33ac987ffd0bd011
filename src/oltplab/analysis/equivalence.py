"""Same within a margin, or not: two one-sided tests (TOST) on a ratio's interval.

"Not significant" never means "the same": a wide interval is not significant either. Two
figures are *equivalent* within +-margin when the 90% interval of their difference lies
inside (-margin, +margin) (TOST at the 5% level); they *differ* when it lies wholly outside
it; otherwise the measurement is *undecided*, and the interval's width says about how many
repetitions would decide, assuming it narrows as one over the square root of their number.
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
    """Repetitions for the interval to fit between the point and the nearer margin."""
    assert comparison.low_pct is not None and comparison.high_pct is not None
    half = (comparison.high_pct - comparison.low_pct) / 2
    room = margin_pct - abs(comparison.diff_pct)
    if room <= 0 or half <= 0:
        # The point itself is at or beyond the margin: only a clear difference can decide.
        room = abs(comparison.diff_pct) - margin_pct
        if room <= 0:
            return None
    return max(comparison.n + 1, math.ceil(comparison.n * (half / room) ** 2))


def equivalence(
    a: PointSample, b: PointSample, margin_pct: float, *, paired: bool, label: str = ""
) -> Equivalence:
    return judge(compare(a, b, paired=paired, label=label, confidence=TOST_CONFIDENCE), margin_pct)
