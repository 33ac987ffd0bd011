"""PNG charts with Matplotlib: TPS by threads, relative to a baseline, timelines, boxplots.

Each chart is planned from the analysis as plain data (its file, its kind, the numbers it
shows) and drawn by a painter: worker processes, one per core, started before the
analysis so that loading Matplotlib overlaps it, drawing while the Markdown and HTML are
written. Drawing is most of a report's time, and each chart is independent of the others.
"""

from __future__ import annotations

import io
import math
import multiprocessing
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from oltplab.analysis import power
from oltplab.analysis.model import Analysis
from oltplab.analysis.tables import Ratio
from oltplab.analysis.telemetry import Timeline
from oltplab.base.processes import die_with
from oltplab.base.wording import counted
from oltplab.report.bars import kept
from oltplab.report.power_chart import CHART_FILE, curve_data, draw_power, measured_where
from oltplab.store.directory import chart_file, safe_name
from oltplab.store.files import write_atomic_bytes

if TYPE_CHECKING:  # loaded by the painter's workers only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

WIDE = (8.0, 4.5)
DPI = 90
Lines = dict[str, tuple[Sequence[float], Sequence[float]]]  # engine: (x, y)
Entries = tuple[tuple[str, str], ...]  # a legend's (engine, colour) in order


@dataclass(frozen=True)
class Chart:
    """One PNG: where it goes, what kind of chart it is and the data it draws."""

    path: Path
    kind: str
    title: str
    data: Any
    size: tuple[float, float] = WIDE
    legend: Entries = ()


def _figure(size: tuple[float, float]) -> Figure:
    import matplotlib

    matplotlib.use("Agg")  # no display on a benchmark host
    from matplotlib.figure import Figure

    return Figure(figsize=size, dpi=DPI)


def render(chart: Chart) -> Path:
    """The PNG written whole or not at all (a full disk leaves the old one)."""
    figure = _figure(chart.size)
    DRAW[chart.kind](figure, chart)
    image = io.BytesIO()
    # The lightest zlib level: these images are mostly noise-like lines, where stronger
    # levels take several times longer for a few percent less.
    figure.savefig(image, format="png", dpi=DPI, pil_kwargs={"compress_level": 1})
    write_atomic_bytes(chart.path, image.getvalue())
    return chart.path


def _start_worker(parent: int) -> None:
    # A SIGKILLed report cannot shut its pool down: without this its workers would wait on
    # the call queue forever, adopted by init. (The kernel signals when the thread that
    # forked them ends: the pool is fed from the main thread.)
    die_with(parent)
    _figure(WIDE)  # loads Matplotlib


class Painter:
    """Draws charts in worker processes (in this one when there is a single core)."""

    def __init__(self) -> None:
        workers = len(os.sched_getaffinity(0))
        self._pool = None
        if workers > 1:
            # Forked before any thread starts (the progress display has one), so each
            # worker is a clean copy; each loads Matplotlib at once, while we analyse.
            context = multiprocessing.get_context("fork")
            self._pool = ProcessPoolExecutor(
                workers, context, initializer=_start_worker, initargs=(os.getpid(),)
            )
        self._pending: list[Future[Path] | Chart] = []

    def draw(self, charts: list[Chart]) -> None:
        for chart in charts:
            self._pending.append(self._pool.submit(render, chart) if self._pool else chart)

    def finish(self) -> list[Path]:
        """Wait until every chart is drawn; their files in the order given."""
        done = [
            item.result() if isinstance(item, Future) else render(item) for item in self._pending
        ]
        self._pending = []
        return done

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)


@contextmanager
def painter() -> Iterator[Painter]:
    started = Painter()
    try:
        yield started
    finally:
        started.close()


# --- planning: the data of each chart, from the analysis --------------------------------------


def plan(analysis: Analysis, folder: Path) -> list[Chart]:
    """Every chart of the report, in the order the report lists them."""
    dataset = analysis.dataset
    # One colour per engine in every chart, whichever engines a chart shows.
    colours = {e: f"C{i % 10}" for i, e in enumerate(dataset.engine_names())}
    planned = []
    for scenario in dataset.scenarios:
        for tier in dataset.tiers(scenario):
            threads = dataset.threads(scenario, tier)
            where = f"{scenario}, tier {tier}"
            lines = _whole_run_tps(analysis, scenario, tier, threads)
            planned.append(
                Chart(
                    folder / chart_file("tps", scenario, tier),
                    "tps",
                    f"TPS by {'engine' if len(threads) == 1 else 'thread count'}, {where}",
                    (threads, lines),
                    legend=tuple((e, colours[e]) for e in lines),
                )
            )
            if (scenario, tier) in analysis.relative:
                bars = _ratios(analysis, scenario, tier)
                planned.append(
                    Chart(
                        folder / chart_file("relative", scenario, tier),
                        "relative",
                        f"Relative throughput, {where} (95% intervals)",
                        (threads, analysis.relative_engine, bars),
                        legend=tuple((e, colours[e]) for e in bars),
                    )
                )
            planned += _stability_charts(analysis, scenario, tier, max(threads), folder, colours)
    planned += release_charts(analysis, folder)
    planned += telemetry_charts(analysis, folder) + latency_charts(analysis, folder, colours)
    return planned + power_charts(analysis, folder)


def release_charts(analysis: Analysis, folder: Path) -> list[Chart]:
    """Steady TPS by release, oldest first, per family, scenario and tier: a line per thread
    count, 95% error bars, a dashed line before each first changed release."""
    grouped: dict[tuple[str, str, str], list[Any]] = {}
    for series in analysis.releases:
        grouped.setdefault((series.family, series.scenario, series.tier), []).append(series)
    charts = []
    for (family, scenario, tier), found in grouped.items():
        releases = [e for e in analysis.dataset.engine_names()
                    if any(e in s.releases for s in found)]  # fmt: skip
        lines = {
            f"{s.threads} thread{'s' * (s.threads != 1)}": (
                [releases.index(e) for e in s.releases],
                [(v.point, v.point - (v.low if v.low is not None else v.point),
                  (v.high if v.high is not None else v.point) - v.point) for v in s.values],
                [releases.index(s.releases[i]) for i in s.changed_at],
            )
            for s in found
        }  # fmt: skip
        charts.append(
            Chart(
                folder / chart_file("releases", family, scenario, tier),
                "releases",
                f"Steady TPS by release, {family}, {scenario}, tier {tier} (changes dashed)",
                (releases, lines),
                legend=tuple((name, f"C{i % 10}") for i, name in enumerate(lines)),
            )
        )
    return charts


def latency_charts(analysis: Analysis, folder: Path, colours: dict[str, str]) -> list[Chart]:
    """p99 against the load offered (the hockey stick), per workload and tier, knees marked."""
    grouped: dict[tuple[str, bool, str], list[Any]] = {}
    for curve in analysis.curves:
        grouped.setdefault((curve.workload, curve.network, curve.tier), []).append(curve)
    charts = []
    for (workload, network, tier), found in grouped.items():
        lines = {
            f"{c.engine} ({c.threads or 'varied '}t)": (
                [float(p.rate) for p in c.points],
                [p.percentiles["p99"].point if "p99" in p.percentiles else math.nan
                 for p in c.points],
                c.knee,
            )
            for c in found
        }  # fmt: skip
        where = f"{workload}, {'network' if network else 'local'}, tier {safe_name(tier)}"
        # The capacity's objective, where it is on p99 (what this chart draws).
        limits = {f.objective.limit_ms for f in analysis.capacities
                  if f.tier == tier and f.objective.percentile == 99}  # fmt: skip
        charts.append(
            Chart(
                folder / chart_file("latency", workload, tier),
                "latency",
                f"p99 latency against offered load, {where} (knees marked"
                + (", objective dashed)" if limits else ")"),
                (lines, sorted(limits)),
                legend=tuple(
                    (name, colours[c.engine]) for name, c in zip(lines, found, strict=True)
                ),
            )
        )
    return charts


def _whole_run_tps(analysis: Analysis, scenario: str, tier: str, threads: list[int]) -> Lines:
    found = analysis.values["tps"]
    lines: Lines = {}
    for engine in analysis.dataset.engine_names():
        xs = [t for t in threads if (scenario, tier, engine, t) in found]
        if xs:
            lines[engine] = (xs, [found[(scenario, tier, engine, t)].whole_run for t in xs])
    return lines


def _ratios(analysis: Analysis, scenario: str, tier: str) -> dict[str, list[tuple[float, ...]]]:
    """Per engine: (threads, ratio, distance down, distance up) of each error bar."""
    return {
        engine: [(t, *_ratio_bar(values[t])) for t in sorted(values)]
        for engine, values in analysis.relative[(scenario, tier)].items()
    }


def _ratio_bar(ratio: Ratio) -> tuple[float, float, float]:
    """(value, distance down, distance up) of a ratio's error bar; none without an interval."""
    steady = ratio.steady
    if steady is None or steady.low is None or steady.high is None:
        return (steady.point if steady else ratio.whole_run), 0.0, 0.0
    return steady.point, steady.point - steady.low, steady.high - steady.point


def telemetry_charts(analysis: Analysis, folder: Path) -> list[Chart]:
    """The slowest and the most unstable cells: TPS over their telemetry, one time axis."""
    planned = []
    for kind, cell in analysis.notable:
        found = analysis.timelines.get(cell.key)
        if found is not None:
            rows = 1 + len(found.panels)
            planned.append(
                Chart(
                    folder / chart_file("telemetry", kind),
                    "telemetry",
                    f"{kind.capitalize()} cell: {found.label}",
                    found,
                    (9.0, 1.6 * rows + 0.8),
                )
            )
    return planned


def _stability_charts(
    analysis: Analysis,
    scenario: str,
    tier: str,
    threads: int,
    folder: Path,
    colours: dict[str, str],
) -> list[Chart]:
    """Per-second TPS at the highest thread count: the timeline, and a boxplot after the cut."""
    dataset = analysis.dataset
    series, steady = {}, {}
    for cell in dataset.cells:
        first_run = (cell.scenario, cell.tier, cell.threads, cell.repetition)
        if first_run != (scenario, tier, threads, 1):
            continue
        per_second = dataset.series.get(cell.key)
        if per_second is not None and len(per_second):
            series[cell.engine] = per_second
            cut = analysis.points.cuts.get(cell.key)
            if cell.measured and cut is not None:
                steady[cell.engine] = cut.sample.series[cell.repetition]
    if not series:
        return []
    where = f"{counted(threads, 'thread')}, {scenario}, tier {tier}"
    legend = tuple((engine, colours[engine]) for engine in series)
    timeline = folder / chart_file("timeline", scenario, tier)
    planned = [Chart(timeline, "timeline", f"Per-second TPS at {where}", series, legend=legend)]
    if steady:
        title = f"Spread of per-second TPS at {where}"
        boxplot = folder / chart_file("boxplot", scenario, tier)
        planned.append(Chart(boxplot, "boxplot", title, steady))
    return planned


# --- drawing: in the painter's workers ---------------------------------------------------------


def _fixed_margins(figure: Figure) -> None:
    # tight_layout would measure every label again, for each of many charts.
    figure.subplots_adjust(left=0.1, right=0.97, top=0.9, bottom=0.16)


def _threads_axis(axis: Axes, threads: list[int]) -> None:
    axis.set_xscale("log", base=2)
    axis.set_xticks(threads, [str(t) for t in threads])
    axis.set_xlabel("threads")
    axis.grid(alpha=0.3)


@cache
def _legend_image(entries: Entries, markers: bool) -> np.ndarray:
    """A legend drawn once per worker and pasted into every chart that has the same one:
    its engine names are most of a chart's text, and text is most of its drawing time."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.lines import Line2D

    figure = _figure(WIDE)
    handles = [
        Line2D([], [], color=colour, marker="o" if markers else None, label=engine)
        for engine, colour in entries
    ]
    legend = figure.legend(handles=handles, fontsize="small", loc="upper left")
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    pixels = np.asarray(canvas.buffer_rgba())
    box, height = legend.get_window_extent(), pixels.shape[0]
    rows = slice(max(0, math.floor(height - box.y1)), math.ceil(height - box.y0))
    return pixels[rows, max(0, math.floor(box.x0)) : math.ceil(box.x1)].copy()


def _legend(figure: Figure, axis: Axes, entries: Entries, markers: bool = True) -> None:
    """The legend in the axes' upper left corner (a fixed place: "best" would search every
    data point for the emptiest corner, per chart)."""
    if not entries:
        return
    image = _legend_image(entries, markers)
    left, top = axis.get_position().x0, axis.get_position().y1
    width, height = figure.get_size_inches() * DPI
    pad = 6  # pixels, as Matplotlib's own legend keeps from the axes
    xo, yo = left * width + pad, top * height - pad - image.shape[0]
    figure.figimage(image, xo=round(xo), yo=round(yo), origin="upper", zorder=5)


def _tps(figure: Figure, chart: Chart) -> None:
    threads, lines = chart.data
    axis = figure.subplots()
    if len(threads) == 1:
        # One thread count: a bar per engine (releases in their order), not a column of
        # points at one x.
        engines = [engine for engine, _ in chart.legend]
        axis.bar(range(len(engines)), [lines[e][1][0] for e in engines],
                 color=[colour for _, colour in chart.legend])  # fmt: skip
        axis.set_xticks(range(len(engines)), engines, rotation=30, ha="right", fontsize=8)
        axis.set_ylabel(f"TPS (whole run, {threads[0]} thread{'s' * (threads[0] != 1)})")
        axis.set_title(chart.title)
        figure.subplots_adjust(bottom=0.25)
        return
    for engine, colour in chart.legend:
        axis.plot(*lines[engine], marker="o", color=colour)
    _threads_axis(axis, threads)
    axis.set_ylabel("TPS (whole run)")
    axis.set_title(chart.title)
    _fixed_margins(figure)
    _legend(figure, axis, chart.legend)


def _error_bars(
    axis: Axes,
    lines: list[tuple[Sequence[float], Sequence[tuple[float, ...]], str]],
    from_zero: bool = True,
) -> None:
    """Lines of (x, (point, distance down, distance up), colour) with their error bars kept
    on the points of all of them: an interval beyond is cut at the edge, a triangle there."""
    drawn = iter(kept([(b[0], b[1], b[2]) for _, found, _ in lines for b in found], from_zero))
    cut = False
    for xs, found, colour in lines:
        mine = [next(drawn) for _ in found]
        axis.errorbar(xs, [b.point for b in mine], yerr=[[b.down for b in mine],
                      [b.up for b in mine]], marker="o", capsize=3, color=colour)  # fmt: skip
        for x, bar in zip(xs, mine, strict=True):
            if bar.cut_high:
                axis.plot([x], [bar.point + bar.up], marker="^", markersize=9, color=colour)
            if bar.cut_low:
                axis.plot([x], [bar.point - bar.down], marker="v", markersize=9, color=colour)
            cut = cut or bar.cut_high or bar.cut_low
    if cut:
        axis.text(0.99, 0.01, "▲▼ interval goes on beyond the chart", transform=axis.transAxes,
                  ha="right", va="bottom", fontsize="x-small", color="#444")  # fmt: skip


def _relative(figure: Figure, chart: Chart) -> None:
    """Steady ratios to the baseline engine with their 95% intervals as error bars."""
    threads, baseline, bars = chart.data
    axis = figure.subplots()
    _error_bars(
        axis,
        [([p[0] for p in bars[e]], [p[1:] for p in bars[e]], colour) for e, colour in chart.legend],
        from_zero=False,
    )
    axis.axhline(1.0, color="grey", linewidth=0.8)
    _threads_axis(axis, threads)
    axis.set_ylabel(f"steady TPS / {baseline}")
    axis.set_title(chart.title)
    _fixed_margins(figure)
    _legend(figure, axis, chart.legend)


def _timeline(figure: Figure, chart: Chart) -> None:
    axis = figure.subplots()
    for engine, colour in chart.legend:
        values = chart.data[engine]
        axis.plot(np.arange(1, len(values) + 1), values, linewidth=0.8, color=colour)
    axis.set_xlabel("second")
    axis.set_ylabel("TPS")
    axis.set_title(chart.title)
    axis.grid(alpha=0.3)
    _fixed_margins(figure)
    _legend(figure, axis, chart.legend, markers=False)


def _boxplot(figure: Figure, chart: Chart) -> None:
    axis = figure.subplots()
    engines = list(chart.data)
    axis.boxplot([chart.data[e] for e in engines], showfliers=True)
    axis.set_xticks(range(1, len(engines) + 1), engines, rotation=20, ha="right", fontsize="small")
    axis.set_ylabel("TPS per second (steady part)")
    axis.set_title(chart.title)
    axis.grid(alpha=0.3, axis="y")
    _fixed_margins(figure)


def _telemetry(figure: Figure, chart: Chart) -> None:
    found: Timeline = chart.data
    axes = figure.subplots(1 + len(found.panels), 1, sharex=True, squeeze=False)[:, 0]
    axes[0].plot(found.seconds, found.tps, color="black", linewidth=0.9)
    axes[0].set_ylabel("TPS", fontsize="small")
    for axis, panel in zip(axes[1:], found.panels, strict=True):
        for label, values in panel.lines.items():
            axis.plot(
                found.seconds,
                [float("nan") if v is None else v for v in values],
                linewidth=0.8,
                label=label,
            )
        axis.set_ylabel(panel.title, fontsize="small")
        if len(panel.lines) > 1:
            axis.legend(fontsize="x-small", loc="upper right")
    for axis in axes:
        for first, last in found.stalls:
            axis.axvspan(first - 0.5, last + 0.5, color="red", alpha=0.15)
        for first, last in found.waits:
            axis.axvspan(first - 0.5, last + 0.5, color="orange", alpha=0.2)
        for first, last in found.disturbed:
            axis.axvspan(first - 0.5, last + 0.5, color="purple", alpha=0.15)
        if found.steady_from > 1:
            axis.axvline(found.steady_from - 0.5, color="grey", linestyle="--", linewidth=0.8)
        axis.grid(alpha=0.3)
    axes[-1].set_xlabel("second")
    figure.suptitle(chart.title, fontsize="medium")
    figure.subplots_adjust(left=0.12, right=0.97, top=0.94, bottom=0.06, hspace=0.15)


def _latency(figure: Figure, chart: Chart) -> None:
    axis = figure.add_subplot()
    colours = dict(chart.legend)
    lines, limits = chart.data
    for name, (rates, p99, knee) in lines.items():
        axis.plot(rates, p99, marker="o", color=colours[name])
        if knee is not None:
            axis.axvline(knee, color=colours[name], linestyle=":", linewidth=1)
    for limit in limits:
        axis.axhline(limit, color="crimson", linestyle="--", linewidth=1)
    axis.set_yscale("log")
    axis.set_xlabel("transactions a second offered")
    axis.set_ylabel("p99 latency (ms)")
    axis.set_title(chart.title, fontsize=9)
    _legend(figure, axis, chart.legend)


def _releases(figure: Figure, chart: Chart) -> None:
    releases, lines = chart.data
    axis = figure.add_subplot()
    colours = dict(chart.legend)
    _error_bars(axis, [(xs, bars, colours[name]) for name, (xs, bars, _) in lines.items()])
    for name, (_, _, changed) in lines.items():
        for x in changed:
            axis.axvline(x - 0.5, color=colours[name], linestyle="--", linewidth=1)
    axis.set_xticks(range(len(releases)), releases, rotation=30, ha="right", fontsize=8)
    axis.set_ylabel("steady TPS")
    axis.set_title(chart.title, fontsize=9)
    figure.subplots_adjust(bottom=0.25)
    _legend(figure, axis, chart.legend)


def _power(figure: Figure, chart: Chart) -> None:
    draw_power(figure, chart.data, chart.title)


def power_charts(analysis: Analysis, folder: Path) -> list[Chart]:
    """Beside a precision search's verdicts: how often its rule decided right in the trials
    measured on the project's machine (analysis/power.py), when they are packed."""
    if analysis.target is None or not power.PACKED.is_file():
        return []
    trials = power.read_trials(power.PACKED)
    title = f"Decided DIFFERENT: {measured_where(trials)}"
    return [Chart(folder / CHART_FILE, "power", title, curve_data(power.curve(trials)))]


DRAW = {
    "power": _power,
    "releases": _releases,
    "latency": _latency,
    "tps": _tps,
    "relative": _relative,
    "timeline": _timeline,
    "boxplot": _boxplot,
    "telemetry": _telemetry,
}
