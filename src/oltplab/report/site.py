"""One static, offline site over many results directories (a nightly history, shards,
imports): an index of the runs with their provenance and calibration, each run's own
report, and one page per point (engine, scenario, tier, threads) with its figure in every
run, the interval of each, the change points `oltplab history` finds, and links back to
the run's report and raw files.

Each page reads its own precomputed data (a small script beside it, loaded as a script so
that the site works from file:// with no server and no network), so a year of nightly runs
is many small pages, not one giant one. Plotly is one shared file.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jinja2

from oltplab.analysis.canary_verdicts import canary_of
from oltplab.analysis.changes import Change, changes_over, started
from oltplab.analysis.comparability import Traits, mismatches
from oltplab.analysis.dataset import load
from oltplab.analysis.model import AnalysisOptions, analyse
from oltplab.analysis.points import Point, Points
from oltplab.base.errors import OltplabError
from oltplab.base.metrics import NOPM
from oltplab.base.telling import Told
from oltplab.report import NoiseFloorOf, build
from oltplab.report.html import embed_json, plotly_js
from oltplab.report.site_facets import facets_of
from oltplab.report.site_overview import headline, overview
from oltplab.report.tool_formats import point_name
from oltplab.store.directory import REPORT_HTML
from oltplab.store.files import write_atomic
from oltplab.store.outputs import whole_folder

# A change point needs runs on both sides of it and one more (analysis/changes).
MIN_HISTORY = 3
# A run's canary without a margin of its own is judged at the report's default.
CANARY_MARGIN_PCT = AnalysisOptions().threshold


@dataclass(frozen=True)
class SiteRun:
    name: str  # unique within the site: the folder's name, numbered when two share it
    path: Path
    started_at: str
    points: Points

    @property
    def traits(self) -> Traits:
        """What it was measured under, under its name on the site."""
        return replace(self.points.dataset.traits[0], run=self.name)


@dataclass(frozen=True)
class SiteFiles:
    folder: Path
    runs: int
    histories: int

    @property
    def index(self) -> Path:
        return self.folder / "index.html"

    def told(self) -> Told:
        """What the site holds, and how to read or publish it."""
        return Told(
            (f"{self.index}: {self.runs} run(s), {self.histories} point(s) over them",),
            f"open {self.index} in a browser (offline), or publish {self.folder} as it is",
        )


def _slug(point: Point) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", point_name(point))


def _unique_names(paths: list[Path]) -> list[str]:
    seen: dict[str, int] = {}
    names = []
    for path in paths:
        seen[path.name] = seen.get(path.name, 0) + 1
        names.append(path.name if seen[path.name] == 1 else f"{path.name}-{seen[path.name]}")
    return names


def _relative(target: Path, start: Path) -> str:
    return Path(os.path.relpath(target.resolve(), start.resolve())).as_posix()


def _index_row(run: SiteRun, latest: SiteRun, floor_for: NoiseFloorOf) -> dict[str, Any]:
    """A run's row of the index, with what its setup does not share with the latest run's."""
    unalike = [m.aspect for m in mismatches([run.traits, latest.traits])]
    dataset = run.points.dataset
    record = next(iter(dataset.runs), {})
    host = record.get("host", {})
    floor = floor_for(dataset)
    canary = canary_of(run.points, CANARY_MARGIN_PCT)
    return {
        "name": run.name,
        "started_at": run.started_at,
        "engines": ", ".join(sorted(dataset.engines)),
        "done": sum(c.measured for c in dataset.cells),
        "failed": sum(not c.measured for c in dataset.cells),
        "origin": (
            f"imported from {record['imported_from']}"
            if "imported_from" in record
            else f"host {host.get('hostname', '?')}, {host.get('cores', '?')} cores, "
            f"sysbench {record.get('sysbench', '?')}, oltplab {record.get('oltplab', '?')}"
        ),
        "calibration": "" if floor is None else f"noise floor {floor.describe()}",
        "unalike": ", ".join(unalike),
        "canary": "" if canary is None else canary.describe(),
        "unfit": canary is not None and canary.unfit,
        "report": f"runs/{run.name}/{REPORT_HTML}",
    }


def _index_data(runs: list[SiteRun], listed: list[dict[str, Any]]) -> dict[str, Any]:
    """What the index's filters and overview charts draw on, its runs newest first as
    its table lists them, its points in the table's order too."""
    facets = [(run.name, facets_of(run.points.dataset)) for run in reversed(runs)]
    return {
        "runs": [
            {"name": name, "spec": f.spec, "dataset": f.dataset, "engines": list(f.engines)}
            for name, f in facets
        ],
        "points": [{"engine": p["engine"], "runs": p["measured_in"]} for p in listed],
        "charts": overview([(run.name, run.points) for run in runs]),
    }


def _history(
    point: Point, runs: list[SiteRun], changes: list[Change], page_dir: Path
) -> dict[str, Any]:
    scenario, tier, engine, threads = point
    rows = []
    for run in runs:
        value = run.points.values("tps").get(point)
        if value is None:
            continue
        figure = headline(value)
        artifacts = [
            _relative(run.path / c.artifact, page_dir)
            for c in run.points.dataset.cells
            if (c.scenario, c.tier, c.engine, c.threads) == point and c.artifact
        ]
        nopm = run.points.values(NOPM).get(point)
        rows.append(
            {
                "run": run.name,
                "started_at": run.started_at,
                "tps": round(figure.tps, 2),
                # A TPC-C-like point's New-Orders a minute (mean of its runs).
                "nopm": round(nopm.whole_run, 1) if nopm is not None else None,
                "low": None if figure.low is None else round(figure.low, 2),
                "high": None if figure.high is None else round(figure.high, 2),
                "repetitions": value.runs,
                "flags": list(value.flags),
                "report": f"../runs/{run.name}/{REPORT_HTML}",
                "raw": artifacts,
            }
        )
    names = {str(r.path): r.name for r in runs}
    marked = [
        {
            "last_good": names.get(c.last_good, c.last_good),
            "first_changed": names.get(c.first_changed, c.first_changed),
            "change_pct": round(c.change_pct, 1),
            "size": c.size.with_interval() if c.size is not None else "",
        }
        for c in changes
        if (c.scenario, c.tier, c.threads) == (scenario, tier, threads) and c.series == engine
    ]
    shown_runs = {row["run"] for row in rows}
    unalike = mismatches([run.traits for run in runs if run.name in shown_runs])
    return {
        "point": point_name(point),
        "rows": rows,
        "changes": marked,
        # A line joining runs not measured alike: each difference, said above the chart.
        "unalike": [m.describe() for m in unalike],
    }


def _side_by_side(runs: list[SiteRun], engines: list[str]) -> list[dict[str, Any]]:
    """Per (scenario, tier, threads), each engine's figure in the latest run that measured
    it, with its interval and that run's name."""
    latest: dict[tuple[str, str, int], dict[str, str]] = {}
    for run in runs:  # oldest first: a later run's figure replaces an earlier one
        for (scenario, tier, engine, threads), value in run.points.values("tps").items():
            figure = headline(value)
            shown = f"{figure.tps:,.1f}"
            if figure.low is not None and figure.high is not None:
                shown += f" [{figure.low:,.1f}, {figure.high:,.1f}]"
            latest.setdefault((scenario, tier, threads), {})[engine] = f"{shown} ({run.name})"
    return [
        {"scenario": s, "tier": t, "threads": n, "cells": [found.get(e, "") for e in engines]}
        for (s, t, n), found in sorted(latest.items())
    ]


def build_site(results: list[Path], out: Path, floor_for: NoiseFloorOf) -> SiteFiles:
    """The site over these results directories, in the order they ran; `floor_for` gives
    the calibrated noise floor of the hosts a run came from, if there is one."""
    if not results:
        raise OltplabError("site: give one results directory or more")
    with whole_folder(out, "site", results) as partial:
        listed = _write_site(results, partial, floor_for)
    return SiteFiles(out, len(results), len(listed))


def _write_site(results: list[Path], out: Path, floor_for: NoiseFloorOf) -> list[dict[str, Any]]:
    """Every file of the site, into `out`; the history pages it lists."""
    ordered = sorted((path.resolve() for path in results), key=started)
    runs = [
        SiteRun(name, path, started(path), Points(load([path])))
        for path, name in zip(ordered, _unique_names(ordered), strict=True)
    ]
    for run in runs:
        build(analyse(run.points.dataset, AnalysisOptions()), out / "runs" / run.name)
    assets = out / "assets"
    assets.mkdir(exist_ok=True)
    write_atomic(assets / "plotly.js", plotly_js())
    engines = sorted({e for run in runs for e in run.points.dataset.engines})
    changes: list[Change] = []
    for engine in engines:
        # The runs are in the order they ran, each loaded once, for every engine.
        having = [r for r in runs if engine in r.points.dataset.engines]
        if len(having) >= MIN_HISTORY:
            changes += changes_over([r.path for r in having], [r.points for r in having], engine)
    points = sorted({p for run in runs for p in run.points.values("tps")})
    templates = jinja2.Environment(
        loader=jinja2.PackageLoader("oltplab.report", "templates"), autoescape=True
    )
    page = templates.get_template("site_history.html.j2")
    histories = out / "history"
    histories.mkdir(exist_ok=True)
    listed = []
    for point in points:
        slug = _slug(point)
        data = _history(point, runs, changes, histories)
        # Names come from folders: none may close the script it is embedded in.
        embedded = json.dumps(data).replace("</", "<\\/")
        write_atomic(histories / f"{slug}.js", f"window.HISTORY = {embedded};\n")
        write_atomic(histories / f"{slug}.html", page.render(title=data["point"], slug=slug))
        listed.append(
            {
                "name": data["point"],
                "href": f"history/{slug}.html",
                "runs": len(data["rows"]),
                "changes": len(data["changes"]),
                "engine": point[2],
                "measured_in": [r["run"] for r in data["rows"]],
            }
        )
    write_atomic(
        out / "engines.html",
        templates.get_template("site_engines.html.j2").render(
            engines=engines, rows=_side_by_side(runs, engines)
        ),
    )
    write_atomic(
        out / "index.html",
        templates.get_template("site_index.html.j2").render(
            runs=[_index_row(run, runs[-1], floor_for) for run in reversed(runs)],
            histories=listed,
            data=embed_json(_index_data(runs, listed)),
        ),
    )
    return listed
