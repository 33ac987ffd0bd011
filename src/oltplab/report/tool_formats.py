"""Exports to the tools teams already run, from the same figures as the report:

- Apache Otava's CSV: one row per results directory (in the order they ran), one column
  per point and metric, with the Otava config that reads it (each column a metric, its
  direction said, the directory an attribute, a point's flags an attribute too);
- Bencher's metric format (BMF JSON): each point a benchmark, its steady TPS as
  `throughput` with the 95% interval as lower and upper values, its latency at the runs'
  percentile as `latency` in nanoseconds (Bencher's unit for it);
- OpenMetrics text of one run's per-second series: TPS and every telemetry metric, a gauge
  family each, labelled by cell and its flags, timestamped by the second it was measured.

No export drops a cell unsaid: flagged cells left out are counted (`Flagged`), and an
export with nothing in it is refused with its reason (`NothingToExport`).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import yaml

from oltplab.analysis.dataset import CellRecord, Dataset
from oltplab.analysis.points import Point, Points, Value
from oltplab.base.errors import OltplabError
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
    """The steady estimate where there is one, else sysbench's whole-run mean; None where
    neither is a number (no format here has a place for one that is not)."""
    if value is None:
        return None
    figure = value.steady.point if value.steady is not None else value.whole_run
    return figure if math.isfinite(figure) else None


@dataclass(frozen=True)
class RunPoints:
    """One results directory of a history: its name, when it began, its points."""

    name: str
    started_at: str
    points: Points


@dataclass(frozen=True)
class Flagged:
    """The measured cells an export reads, and those a flag puts in doubt: what it leaves
    out without --include-flagged, counted so that it never leaves them out unsaid."""

    measured: int
    cells: int
    by_flag: dict[str, int]

    @classmethod
    def of(cls, datasets: Iterable[Dataset]) -> Flagged:
        measured = [cell for dataset in datasets for cell in dataset.cells if cell.measured]
        doubted = [cell for cell in measured if cell.suspect_flags]
        flags = Counter(flag for cell in doubted for flag in cell.suspect_flags)
        return cls(len(measured), len(doubted), dict(sorted(flags.items())))

    @property
    def named(self) -> str:
        """`interference 45, stall 2`: how many cells carry each flag."""
        return ", ".join(f"{flag} {count}" for flag, count in self.by_flag.items())

    def left_out(self, remedy: str = "exports them with their flags") -> str:
        return (
            f"left out {self.cells} flagged cell(s) of {self.measured} measured "
            f"({self.named}); --include-flagged {remedy}"
        )

    def nothing_to_export(self, include_flagged: bool) -> OltplabError:
        """The reason an export holds nothing, as the error that refuses it."""
        if self.cells and not include_flagged:
            which = (
                f"all {self.measured} measured cell(s) are flagged"
                if self.cells == self.measured
                else f"{self.cells} of {self.measured} measured cell(s) are flagged and the "
                "others give no figure"
            )
            return OltplabError(
                f"nothing to export: {which} ({self.named}), and flagged cells are left out "
                "unless --include-flagged, which exports them with their flags"
            )
        if not self.measured:
            return OltplabError(
                "nothing to export: no cell is measured (oltplab status lists the failed "
                "and pending ones)"
            )
        return OltplabError(
            f"nothing to export: none of the {self.measured} measured cell(s) gives a figure"
        )


@dataclass(frozen=True)
class OtavaFiles:
    """A history for Otava: its CSV files (name, text), the first under the name asked
    for, and the config that reads them all."""

    csvs: list[tuple[str, str]]
    config: str


def otava(runs: list[RunPoints], csv_name: str, include_flagged: bool) -> OtavaFiles | None:
    """The history as CSV, runs as rows (oldest first), and the Otava config that reads it;
    None when no run has a figure to give.

    Otava's CSV reader takes every row's value of a metric as a number, and an empty one
    stops it; a point some runs lack therefore goes to a file whose rows are the runs that
    have it. The columns the same
    runs have share a file, each file is a test, and when there are several the test
    group `oltplab` names them all, so that `otava analyze ... oltplab` reads every one."""
    values = [
        {metric: run.points.values(metric, include_flagged) for metric, _ in OTAVA_METRICS}
        for run in runs
    ]
    points = sorted({p for found in values for by_point in found.values() for p in by_point})
    shared: dict[tuple[int, ...], list[tuple[Point, str, int]]] = {}
    for point in points:
        for metric, direction in OTAVA_METRICS:
            having = tuple(
                i for i, found in enumerate(values) if _figure(found[metric].get(point)) is not None
            )
            if having:
                shared.setdefault(having, []).append((point, metric, direction))
    if not shared:
        return None
    # The file most runs have first: the usual history, where every run has every point.
    groups = sorted(shared.items(), key=lambda group: -len(group[0]))
    csvs: list[tuple[str, str]] = []
    tests: dict[str, dict[str, object]] = {}
    for number, (having, columns) in enumerate(groups, start=1):
        name, test = _otava_names(csv_name, number)
        text, metrics, attributes = _otava_csv([runs[i] for i in having],
                                               [values[i] for i in having], columns)  # fmt: skip
        csvs.append((name, text))
        tests[test] = {
            "type": "csv",
            "file": name,
            "time_column": "time",
            "attributes": attributes,
            "metrics": metrics,
        }
    config: dict[str, object] = {"tests": tests}
    if len(tests) > 1:
        config["test_groups"] = {OTAVA_TEST: list(tests)}
    return OtavaFiles(csvs, yaml.safe_dump(config, sort_keys=False))


def _otava_names(csv_name: str, number: int) -> tuple[str, str]:
    """The number-th file's name and its test's: `hist.csv` and `oltplab` for the first,
    `hist-2.csv` and `oltplab-2` for the second."""
    if number == 1:
        return csv_name, OTAVA_TEST
    path = Path(csv_name)
    return f"{path.stem}-{number}{path.suffix}", f"{OTAVA_TEST}-{number}"


def _otava_csv(
    runs: list[RunPoints],
    values: list[dict[str, dict[Point, Value]]],
    columns: list[tuple[Point, str, int]],
) -> tuple[str, dict[str, dict[str, object]], list[str]]:
    """One file's text, its metrics for the config, and its attributes: the run, and a
    `.../flags` column for each point flagged in one of the file's runs (the point's cells'
    flags, as attributes are text Otava keeps beside a change it finds)."""
    named = [(csv_text(f"{point_name(p)}/{metric}"), metric, p) for p, metric, _ in columns]
    points = list(dict.fromkeys(p for p, _, _ in columns))
    marks = [
        {p: ",".join(sorted({f for by_point in found.values() for f in _flags(by_point.get(p))}))
         for p in points}
        for found in values
    ]  # fmt: skip
    flagged = [(csv_text(f"{point_name(p)}/flags"), p) for p in points if any(m[p] for m in marks)]
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["time", "run", *(name for name, *_ in named), *(n for n, _ in flagged)])
    for run, found, marked in zip(runs, values, marks, strict=True):
        figures = [_figure(found[metric].get(p)) for _, metric, p in named]
        writer.writerow(
            [
                run.started_at,
                csv_text(run.name),
                *("" if f is None else f"{f:.6g}" for f in figures),
                *(marked[p] for _, p in flagged),
            ]
        )
    metrics: dict[str, dict[str, object]] = {
        name: {"column": name, "direction": direction}
        for (name, _, _), (_, _, direction) in zip(named, columns, strict=True)
    }
    return text.getvalue(), metrics, ["run", *(n for n, _ in flagged)]


def _flags(value: Value | None) -> tuple[str, ...]:
    return value.flags if value is not None else ()


def bencher(points: Points, include_flagged: bool) -> str | None:
    """Bencher Metric Format: {benchmark: {measure: {value, lower_value, upper_value}}};
    None when no point has a figure to give."""
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
    return json.dumps(found, indent=2) + "\n" if found else None


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


def openmetrics(dataset: Dataset) -> str | None:
    """Every cell's per-second TPS and telemetry as OpenMetrics gauges; None when no cell
    has a second to give."""
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
                ("results", Path(cell.source).name), ("flags", ",".join(cell.flags)),
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
    if not any(families.values()):
        return None
    out = []
    for family, lines in sorted(families.items()):
        out += [f"# TYPE {family} gauge", *lines]
    return "\n".join([*out, "# EOF"]) + "\n"
