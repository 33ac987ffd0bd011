"""Error bars that keep a chart's axis on its points: an interval reaching far beyond the
data (a cell with a few wild seconds, two repetitions far apart) is drawn up to the edge
and marked there, instead of stretching the axis until every point sits in one flat line.

The page's interactive chart applies the same rule in its script (report.html.j2,
`keepOnPoints`), with REACH handed over in its data."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# How far past its points, in lengths of the points' own spread, an axis may reach: the
# points keep at least a third of its height.
REACH = 1.0


@dataclass(frozen=True)
class Bar:
    """A point's error bar as drawn: its distances down and up, and whether the interval
    went on beyond the chart at either end."""

    point: float
    down: float
    up: float
    cut_low: bool = False
    cut_high: bool = False


def window(points: Sequence[float], from_zero: bool = False) -> tuple[float, float]:
    """The values an axis over these points may show; from zero for a count like TPS,
    whose axis starts there and whose interval below zero is no value it can take."""
    low, high = min(points), max(points)
    if from_zero:
        low = min(low, 0.0)
    spread = (high - low) or abs(high) or 1.0
    return (low if from_zero else low - REACH * spread), high + REACH * spread


def kept(bars: Sequence[tuple[float, float, float]], from_zero: bool = False) -> list[Bar]:
    """(point, distance down, distance up) of each bar, cut at the window of all the
    points (one axis holds them all)."""
    if not bars:
        return []
    bottom, top = window([b[0] for b in bars], from_zero)
    out = []
    for point, down, up in bars:
        low, high = point - down, point + up
        out.append(
            Bar(
                point,
                point - max(low, bottom) if low < bottom else down,
                min(high, top) - point if high > top else up,
                low < bottom,
                high > top,
            )
        )
    return out
