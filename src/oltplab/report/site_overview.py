"""The site index's overview charts: per scenario and tier, one small chart of each
engine's steady TPS at each thread count over the runs, oldest first, with its 95%
interval. The intervals are cut to the chart's points by the report's rule (bars.kept)
over every point of the chart, so one run with a wild interval does not flatten the rest;
where one is cut, its end is kept to be marked and named."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from oltplab.analysis.points import Points, Value
from oltplab.report.bars import kept


@dataclass(frozen=True)
class Headline:
    """A point's figure in one run: steady TPS and its interval, or sysbench's whole-run
    TPS where there is no per-second data to estimate a steady part from."""

    tps: float
    low: float | None = None
    high: float | None = None


def headline(value: Value) -> Headline:
    steady = value.steady
    if steady is None:
        return Headline(value.whole_run)
    return Headline(steady.point, steady.low, steady.high)


def _bar(figure: Headline) -> tuple[float, float, float]:
    down = 0.0 if figure.low is None else figure.tps - figure.low
    up = 0.0 if figure.high is None else figure.high - figure.tps
    return figure.tps, down, up


def overview(runs: Sequence[tuple[str, Points]]) -> list[dict[str, Any]]:
    """The charts, from each run's name and points, the runs oldest first."""
    found: dict[tuple[str, str], list[tuple[str, int, str, Headline]]] = {}
    for name, points in runs:
        for (scenario, tier, engine, threads), value in points.values("tps").items():
            found.setdefault((scenario, tier), []).append((engine, threads, name, headline(value)))
    charts = []
    for (scenario, tier), figures in sorted(found.items()):
        # One axis holds every line of a chart, so the window is over all its points.
        bars = kept([_bar(figure) for *_, figure in figures], from_zero=True)
        lines: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for (engine, threads, run, figure), bar in zip(figures, bars, strict=True):
            lines.setdefault((engine, threads), []).append(
                {
                    "run": run,
                    "tps": round(figure.tps, 2),
                    "down": round(bar.down, 2),
                    "up": round(bar.up, 2),
                    # Where the interval really ends, said beside its cut end.
                    "low": None if figure.low is None or not bar.cut_low else round(figure.low, 2),
                    "high": (
                        None if figure.high is None or not bar.cut_high else round(figure.high, 2)
                    ),
                }
            )
        charts.append(
            {
                "title": f"{scenario} / {tier}",
                "lines": [
                    {"engine": engine, "name": f"{engine} {threads}t", "rows": rows}
                    for (engine, threads), rows in sorted(lines.items())
                ],
            }
        )
    return charts
