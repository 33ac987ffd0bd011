"""Exports to the tools teams already run, from the same figures as the report:

- Apache Otava's CSV: one row per results directory (in the order they ran), one column
  per point and metric, with the Otava config that reads it (each column a metric, its
  direction said, the directory an attribute);
- Bencher's metric format (BMF JSON): each point a benchmark, its steady TPS as
  `throughput` with the 95% interval as lower and upper values, its latency at the runs'
  percentile as `latency` in nanoseconds (Bencher's unit for it);
- OpenMetrics text of one run's per-second series: TPS and every telemetry metric, a gauge
  family each, labelled by cell, timestamped by the second it was measured.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import yaml

from oltplab.analysis.dataset import CellRecord, Dataset
from oltplab.analysis.points import Point, Points, Value
from oltplab.report.export import csv_text

OTAVA_TEST = "oltplab"
# Otava's direction: 1 when a higher value is better, -1 when lower is.
OTAVA_METRICS = (("tps", 1), ("qps", 1), ("lat_pct_ms", -1))
NS_PER_MS = 1_000_000


def point_name(point: Point) -> str:
    """`mysql-8.0.31/rw-local/2G/16t`: a point as one name, the same in every export."""
    scenario, tier, engine, threads = point
    return f"{engine}/{scenario}/{tier}/{threads}t"


def _figure(value: Value | None) -> float | None:
    """The steady estimate where there is one, else sysbench's whole-run mean."""
    if value is None:
        return None
    return value.steady.point if value.steady is not None else value.whole_run


@dataclass(frozen=True)
class RunPoints:
    """One results directory of a history: its name, when it began, its points."""

    name: str
    started_at: str
    points: Points


def otava(runs: list[RunPoints], csv_name: str, include_flagged: bool) -> tuple[str, str]:
    """The CSV (runs as rows, oldest first) and the Otava config that reads it from
    `csv_name`."""
    values = [
        {metric: run.points.values(metric, include_flagged) for metric, _ in OTAVA_METRICS}
        for run in runs
    ]
    points = sorted({p for found in values for by_point in found.values() for p in by_point})
    columns = [
        (csv_text(f"{point_name(p)}/{metric}"), metric, p, direction)
        for p in points
        for metric, direction in OTAVA_METRICS
        if any(p in found[metric] for found in values)
    ]
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["time", "run", *(name for name, *_ in columns)])
    for run, found in zip(runs, values, strict=True):
        figures = [_figure(found[metric].get(p)) for _, metric, p, _ in columns]
        writer.writerow(
            [
                run.started_at,
                csv_text(run.name),
                *("" if f is None else f"{f:.6g}" for f in figures),
            ]
        )
    config = {
        "tests": {
            OTAVA_TEST: {
                "type": "csv",
                "file": csv_name,
                "time_column": "time",
                "attributes": ["run"],
                "metrics": {
                    name: {"column": name, "direction": direction}
                    for name, _, _, direction in columns
                },
            }
        }
    }
    return text.getvalue(), yaml.safe_dump(config, sort_keys=False)


def bencher(points: Points, include_flagged: bool) -> str:
    """Bencher Metric Format: {benchmark: {measure: {value, lower_value, upper_value}}}."""
    tps = points.values("tps", include_flagged)
    latency = points.values("lat_pct_ms", include_flagged)
    found: dict[str, dict[str, dict[str, float]]] = {}
    for point in sorted(tps.keys() | latency.keys()):
        measures: dict[str, dict[str, float]] = {}
        if (value := tps.get(point)) is not None and (figure := _figure(value)) is not None:
            measures["throughput"] = {"value": figure}
            steady = value.steady
            if steady is not None and steady.low is not None and steady.high is not None:
                measures["throughput"] |= {"lower_value": steady.low, "upper_value": steady.high}
        if (value := latency.get(point)) is not None and math.isfinite(value.whole_run):
            measures["latency"] = {"value": value.whole_run * NS_PER_MS}
        if measures:
            found[point_name(point)] = measures
    return json.dumps(found, indent=2) + "\n"


_NAME = re.compile(r"[^a-zA-Z0-9_]")


def _family(name: str) -> str:
    return "oltplab_" + _NAME.sub("_", name).strip("_").lower()


def _label(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _begun(cell: CellRecord, dataset: Dataset) -> datetime | None:
    """When a cell's first second began: its own start, else (an imported cell, which
    has none) its run's, so that its seconds still count from one instant."""
    stamps = [cell.started_at] + [
        str(r.get("started_at") or "") for r in dataset.runs if r.get("results") == cell.source
    ]
    for stamp in stamps:
        try:
            return datetime.fromisoformat(stamp)
        except ValueError:
            continue
    return None


def openmetrics(dataset: Dataset) -> str:
    """Every cell's per-second TPS and telemetry as OpenMetrics gauges."""
    families: dict[str, list[str]] = {}
    for cell in sorted(dataset.cells, key=lambda c: c.key):
        begun = _begun(cell, dataset)
        if begun is None:
            continue
        labels = ",".join(
            f'{key}="{_label(str(value))}"'
            for key, value in (
                ("engine", cell.engine), ("scenario", cell.scenario), ("tier", cell.tier),
                ("threads", cell.threads), ("rate", cell.rate), ("repetition", cell.repetition),
                ("results", Path(cell.source).name),
            )
        )  # fmt: skip
        series: list[tuple[str, list[tuple[int, float]]]] = [
            ("tps", [(i + 1, float(v)) for i, v in enumerate(dataset.series.get(cell.key, []))])
        ]
        for (source, metric), points in sorted(dataset.telemetry.get(cell.key, {}).items()):
            series.append((f"{source}_{metric}", points))
        for name, points in series:
            lines = families.setdefault(_family(name), [])
            for second, value in points:
                if not math.isfinite(value):
                    continue
                stamp = (begun + timedelta(seconds=second)).timestamp()
                lines.append(f"{_family(name)}{{{labels}}} {value!r} {stamp:.3f}")
    out = []
    for family, lines in sorted(families.items()):
        out += [f"# TYPE {family} gauge", *lines]
    return "\n".join([*out, "# EOF"]) + "\n"
