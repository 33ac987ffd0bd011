"""PNG charts with Matplotlib: TPS by threads, relative to a baseline, timelines, boxplots."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on a benchmark host
import matplotlib.pyplot as plt  # noqa: E402

from oltplab.analysis.dataset import Dataset  # noqa: E402
from oltplab.analysis.tables import points, relative  # noqa: E402
from oltplab.analysis.telemetry import notable_cells, timeline  # noqa: E402
from oltplab.plan import safe_name  # noqa: E402
from oltplab.report import ReportOptions  # noqa: E402
from oltplab.stats import steady  # noqa: E402
from oltplab.store.files import write_atomic_bytes  # noqa: E402


def _save(figure: plt.Figure, path: Path) -> Path:
    # Fixed margins: tight_layout would measure every label again, for each of many charts.
    figure.subplots_adjust(left=0.1, right=0.97, top=0.9, bottom=0.16)
    return _write(figure, path)


def _write(figure: plt.Figure, path: Path) -> Path:
    """The PNG written whole or not at all (a full disk leaves the old one)."""
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=90)
    plt.close(figure)
    write_atomic_bytes(path, image.getvalue())
    return path


def _threads_axis(axis: plt.Axes, threads: list[int]) -> None:
    axis.set_xscale("log", base=2)
    axis.set_xticks(threads, [str(t) for t in threads])
    axis.set_xlabel("threads")
    axis.grid(alpha=0.3)


def write_all(dataset: Dataset, folder: Path, options: ReportOptions) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    found = points(dataset)
    ratios = relative(dataset, options.relative_engine(dataset))
    written = []
    for scenario in dataset.scenarios:
        for tier in dataset.tiers(scenario):
            threads = dataset.threads(scenario, tier)
            name = f"{scenario}_{safe_name(tier)}"
            figure, axis = plt.subplots(figsize=(8, 4.5))
            for engine in dataset.engine_names():
                xs = [t for t in threads if (scenario, tier, engine, t) in found]
                if xs:
                    axis.plot(
                        xs,
                        [found[(scenario, tier, engine, t)].value for t in xs],
                        marker="o",
                        label=engine,
                    )
            _threads_axis(axis, threads)
            axis.set_ylabel("TPS")
            axis.set_title(f"TPS by thread count, {scenario}, tier {tier}")
            axis.legend(fontsize="small")
            written.append(_save(figure, folder / f"tps_{name}.png"))

            if (scenario, tier) in ratios:
                figure, axis = plt.subplots(figsize=(8, 4.5))
                for engine, values in ratios[(scenario, tier)].items():
                    xs = sorted(values)
                    axis.plot(xs, [values[t].value for t in xs], marker="o", label=engine)
                axis.axhline(1.0, color="grey", linewidth=0.8)
                _threads_axis(axis, threads)
                axis.set_ylabel(f"TPS / {options.relative_engine(dataset)}")
                axis.set_title(f"Relative throughput, {scenario}, tier {tier}")
                axis.legend(fontsize="small")
                written.append(_save(figure, folder / f"relative_{name}.png"))
            written += _stability_charts(dataset, scenario, tier, max(threads), folder, name)
    return written + telemetry_charts(dataset, folder)


def telemetry_chart_name(kind: str) -> str:
    return f"telemetry_{kind.replace(' ', '_')}.png"


def telemetry_charts(dataset: Dataset, folder: Path) -> list[Path]:
    """The slowest and the most unstable cells: TPS over their telemetry, one time axis."""
    written = []
    for kind, cell in notable_cells(dataset):
        found = timeline(dataset, cell)
        if found is None:
            continue
        rows = 1 + len(found.panels)
        figure, axes = plt.subplots(rows, 1, figsize=(9, 1.6 * rows + 0.8), sharex=True)
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
            if found.cut:
                axis.axvline(found.cut + 0.5, color="grey", linestyle="--", linewidth=0.8)
            axis.grid(alpha=0.3)
        axes[-1].set_xlabel("second")
        figure.suptitle(f"{kind.capitalize()} cell: {found.label}", fontsize="medium")
        figure.subplots_adjust(left=0.12, right=0.97, top=0.94, bottom=0.06, hspace=0.15)
        written.append(_write(figure, folder / telemetry_chart_name(kind)))
    return written


def _stability_charts(
    dataset: Dataset, scenario: str, tier: str, threads: int, folder: Path, name: str
) -> list[Path]:
    """Per-second TPS at the highest thread count: the timeline, and a boxplot after the cut."""
    series, measured = {}, set()
    for cell in dataset.cells:
        if (cell.scenario, cell.tier, cell.threads, cell.repetition) == (
            scenario,
            tier,
            threads,
            1,
        ):
            values = dataset.series.get(cell.key)
            if values:
                series[cell.engine] = values
                if cell.measured:
                    measured.add(cell.engine)
    if not series:
        return []
    figure, axis = plt.subplots(figsize=(8, 4.5))
    for engine, values in series.items():
        axis.plot(range(1, len(values) + 1), values, linewidth=0.8, label=engine)
    axis.set_xlabel("second")
    axis.set_ylabel("TPS")
    axis.set_title(f"Per-second TPS at {threads} threads, {scenario}, tier {tier}")
    axis.legend(fontsize="small")
    axis.grid(alpha=0.3)
    timeline = _save(figure, folder / f"timeline_{name}.png")
    figure, axis = plt.subplots(figsize=(8, 4.5))
    engines = [e for e in series if e in measured]
    if not engines:
        plt.close(figure)
        return [timeline]
    axis.boxplot([steady(series[e], dataset.fixed_cut)[1] for e in engines], showfliers=True)
    axis.set_xticks(range(1, len(engines) + 1), engines, rotation=20, ha="right", fontsize="small")
    axis.set_ylabel("TPS per second (steady part)")
    axis.set_title(f"Spread of per-second TPS at {threads} threads, {scenario}, tier {tier}")
    axis.grid(alpha=0.3, axis="y")
    return [timeline, _save(figure, folder / f"boxplot_{name}.png")]
