"""One self-contained HTML page over precomputed data: Plotly inlined, no network needed."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import plotly

from oltplab.analysis.dataset import Dataset
from oltplab.analysis.tables import dbms, points
from oltplab.analysis.telemetry import notable_cells, operation_table, timeline
from oltplab.report import ReportOptions
from oltplab.report.format import CROSS_FAMILY, scenario_title


def plotly_js() -> str:
    return (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text()


def page_data(dataset: Dataset, options: ReportOptions) -> dict[str, Any]:
    """What the page draws: one record per point, and each cell's per-second TPS."""
    metrics = {m: points(dataset, m) for m in ("tps", "qps", "lat_p95_ms")}
    keys: dict[tuple[str, str, str, int], list[str]] = {}
    for cell in dataset.cells:
        if cell.key in dataset.series:
            keys.setdefault((cell.scenario, cell.tier, cell.engine, cell.threads), []).append(
                cell.key
            )
    records = []
    for point, value in metrics["tps"].items():
        scenario, tier, engine, threads = point
        records.append(
            {
                "scenario": scenario,
                "tier": tier,
                "engine": engine,
                "threads": threads,
                "tps": round(value.value, 2),
                "qps": round(metrics["qps"][point].value, 2) if point in metrics["qps"] else None,
                "p95": round(metrics["lat_p95_ms"][point].value, 3)
                if point in metrics["lat_p95_ms"]
                else None,
                "runs": value.runs,
                "flags": list(value.flags),
                "cells": keys.get(point, []),
            }
        )
    series_keys = {k for record in records for k in record["cells"]}
    labels = {
        c.key: f"{c.engine} {c.scenario} {c.tier} {c.threads} threads, run {c.repetition}"
        for c in dataset.cells
        if c.key in series_keys
    }
    return {
        **telemetry_data(dataset),
        "scenarios": dataset.scenarios,
        "scenario_titles": {s: scenario_title(s, dataset.workloads) for s in dataset.scenarios},
        # The kind of server each engine is, so the page can label cross-family views.
        "kinds": {e: dbms(dataset.engines[e].family) for e in dataset.engine_names()},
        "cross_family": CROSS_FAMILY,
        "tiers": dataset.tiers(),
        "engines": dataset.engine_names(),
        "baseline": options.relative_engine(dataset),
        "points": records,
        "series": {k: [round(v, 2) for v in dataset.series[k]] for k in sorted(series_keys)},
        "labels": labels,
    }


def _rounded(values: list[float | None]) -> list[float | None]:
    return [None if v is None else round(v, 3) for v in values]


def telemetry_data(dataset: Dataset) -> dict[str, Any]:
    """Each cell's timeline (TPS over the telemetry panels) and the per-operation table."""
    timelines = {}
    for cell in dataset.cells:
        found = timeline(dataset, cell)
        if found is None:
            continue
        timelines[cell.key] = {
            "label": found.label,
            "tps": _rounded(list(found.tps)),
            "cut": found.cut,
            "stalls": found.stalls,
            "panels": [
                {"title": p.title, "lines": {n: _rounded(v) for n, v in p.lines.items()}}
                for p in found.panels
            ],
        }
    notable = {name: cell.key for name, cell in notable_cells(dataset)}
    operations = [r.as_dict(2) for r in operation_table(dataset)]
    return {"timelines": timelines, "notable": notable, "operations": operations}


def embed_json(data: Any) -> str:
    """JSON that is safe inside a <script> element whatever the names in it say."""
    text = json.dumps(data, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(dataset: Dataset, options: ReportOptions) -> str:
    environment = jinja2.Environment(
        loader=jinja2.FunctionLoader(
            lambda name: resources.files("oltplab.report").joinpath("templates", name).read_text()
        ),
        autoescape=True,
    )
    template = environment.get_template("report.html.j2")
    return template.render(
        title=", ".join(str(p) for p in dataset.sources),
        data=embed_json(page_data(dataset, options)),
        plotly=plotly_js().replace("</script", "<\\/script"),
    )
