"""Did a repeat reproduce the original? Every point both measured, judged within a margin
(two one-sided tests on the repeat against the original), and one verdict over them:
`reproduced within 3%`, `not reproduced`, or `undecided`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oltplab.analysis.dataset import load
from oltplab.analysis.equivalence import DIFFERENT, EQUIVALENT, Equivalence, equivalence
from oltplab.analysis.estimate import PointSample
from oltplab.analysis.points import Point, Points
from oltplab.base.errors import EXIT_REGRESSED, EXIT_UNDECIDED, OltplabError
from oltplab.base.metrics import TPS, Measure
from oltplab.base.telling import Rows


@dataclass(frozen=True)
class Reproduction:
    points: list[tuple[Point, Equivalence]]
    margin_pct: float

    @property
    def verdict(self) -> str:
        verdicts = {found.verdict for _, found in self.points}
        if verdicts == {EQUIVALENT}:
            return f"reproduced within {self.margin_pct:g}%"
        if DIFFERENT in verdicts:
            return "not reproduced"
        needed = [found.needed for _, found in self.points if found.needed]
        more = f"; about {max(needed)} repetitions would decide" if needed else ""
        return f"undecided: the interval is wider than the margin of {self.margin_pct:g}%{more}"

    @property
    def exit_status(self) -> int:
        """0 reproduced, 1 not (a difference found), 5 undecided: as every verdict exits."""
        verdicts = {found.verdict for _, found in self.points}
        if verdicts == {EQUIVALENT}:
            return 0
        return EXIT_REGRESSED if DIFFERENT in verdicts else EXIT_UNDECIDED

    def said(self) -> tuple[Rows, str]:
        """Each point's verdict, with its interval, then the one verdict over them."""
        columns = ("scenario", "tier", "engine", "threads", "verdict")
        rows = tuple(
            (scenario, tier, engine, str(threads), judged.describe("reproduced"))
            for (scenario, tier, engine, threads), judged in self.points
        )
        title = f"Repeat against original, within ±{self.margin_pct:g}%"
        return Rows(title, columns, rows, folded=columns), f"verdict: {self.verdict}"


def points_of(results: Path, measure: Measure) -> Points:
    return Points(load([results]), measure=measure)


def common_points(
    first: Points, second: Points
) -> tuple[dict[Point, PointSample], dict[Point, PointSample], list[Point]]:
    """Two results directories' steady samples, and the points both measured."""
    before, after = first.samples(), second.samples()
    common = sorted(before.keys() & after.keys())
    if not common:
        raise OltplabError(
            f"{second.dataset.sources[0]}: measured no point that {first.dataset.sources[0]} "
            "measured (engine, scenario, tier and thread count must match)"
        )
    return before, after, common


def reproduction(
    original: Path, repeat: Path, margin_pct: float, measure: Measure = TPS
) -> Reproduction:
    """The repeat's steady figure (TPS, or a per-transaction cost) against the original's,
    point by point."""
    before, after, common = common_points(points_of(original, measure), points_of(repeat, measure))
    return Reproduction(
        [
            (p, equivalence(after[p], before[p], margin_pct, paired=False, label=str(p)))
            for p in common
        ],
        margin_pct,
    )
