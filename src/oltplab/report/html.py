"""One HTML page over precomputed data, Plotly inlined, no network needed: the summary and
every section of report.md, rendered from the same Markdown lines, around interactive
charts drawn from the analysis. The PNG charts it shows are the files beside it."""

from __future__ import annotations

import base64
import json
from importlib import resources
from typing import Any

import jinja2
import numpy as np
from markdown_it import MarkdownIt

from oltplab.analysis.changes import disagreement_sentences, no_change_sentences
from oltplab.analysis.latency import PERCENTILES
from oltplab.analysis.model import Analysis
from oltplab.analysis.points import Value, dbms
from oltplab.base.metrics import latency_metric
from oltplab.base.wording import counted
from oltplab.report import markdown
from oltplab.report.bars import REACH
from oltplab.report.format import CROSS_FAMILY, scenario_title, with_interval


def plotly_js() -> str:
    return resources.files("oltplab.report").joinpath("assets", "plotly-basic.min.js").read_text()


def packed(values: np.ndarray) -> dict[str, Any]:
    """A per-second series in a quarter of its JSON size: 16-bit steps between its lowest
    and highest value, base64-coded. The page draws lines from it, and a step of 1/65,535
    of the series' range is far finer than a chart can show."""
    low = float(values.min()) if len(values) else 0.0
    step = (float(values.max()) - low) / 65535 if len(values) else 0.0
    steps = np.zeros(len(values)) if step == 0 else np.rint((values - low) / step)
    data = base64.b64encode(steps.astype("<u2").tobytes()).decode()
    return {"low": low, "step": step, "steps": data}


def _interval(value: Value | None) -> tuple[float | None, float | None, float | None]:
    """The steady TPS of a point with its interval; without per-second data, none."""
    if value is None or value.steady is None:
        return None, None, None
    steady = value.steady
    low = None if steady.low is None else round(steady.low, 2)
    high = None if steady.high is None else round(steady.high, 2)
    return round(steady.point, 2), low, high


def page_data(analysis: Analysis) -> dict[str, Any]:
    """What the page draws: one record per point, and each cell's per-second TPS."""
    dataset, values = analysis.dataset, analysis.values
    keys: dict[tuple[str, str, str, int], list[str]] = {}
    for cell in dataset.cells:
        if cell.key in dataset.series:
            keys.setdefault((cell.scenario, cell.tier, cell.engine, cell.threads), []).append(
                cell.key
            )
    records: list[dict[str, Any]] = []
    for point, value in values["tps"].items():
        scenario, tier, engine, threads = point
        tps, low, high = _interval(value)
        qps = values["qps"].get(point)
        latency = {f"p{p}": values[latency_metric(p)].get(point) for p in dataset.percentiles}
        records.append(
            {
                "scenario": scenario,
                "tier": tier,
                "engine": engine,
                "threads": threads,
                "tps": tps,
                "tps_low": low,
                "tps_high": high,
                "tps_whole_run": round(value.whole_run, 2),
                "qps": round(qps.whole_run, 2) if qps else None,
                **{key: round(v.whole_run, 3) if v else None for key, v in latency.items()},
                "runs": value.runs,
                "flags": list(value.flags),
                "cells": keys.get(point, []),
            }
        )
    series_keys = {k for record in records for k in record["cells"]}
    labels = {
        c.key: (
            f"{c.engine} {c.scenario} {c.tier} {counted(c.threads, 'thread')}, run {c.repetition}"
        )
        for c in dataset.cells
        if c.key in series_keys
    }
    return {
        **telemetry_data(analysis),
        "scenarios": dataset.scenarios,
        "scenario_titles": {s: scenario_title(s, dataset.workloads) for s in dataset.scenarios},
        # The kind of server each engine is, so the page can label cross-family views.
        "kinds": {e: dbms(dataset.engines[e].family) for e in dataset.engine_names()},
        "cross_family": CROSS_FAMILY,
        "tiers": dataset.tiers(),
        "percentiles": dataset.percentiles,
        "engines": dataset.engine_names(),
        "baseline": analysis.relative_engine,
        "reach": REACH,
        "points": records,
        "series": {k: packed(dataset.series[k]) for k in sorted(series_keys)},
        "curves": [
            {
                "engine": c.engine,
                "workload": c.workload,
                "tier": c.tier,
                "threads": c.threads,
                "knee": c.knee,
                "points": [
                    {
                        "rate": p.rate,
                        "saturated": p.saturated,
                        "percentiles": {
                            name: round(e.point, 3) for name, e in p.percentiles.items()
                        },
                    }
                    for p in c.points
                ],
            }
            for c in analysis.curves
        ],
        "capacities": [
            {
                "engine": f.engine,
                "tier": f.tier,
                "sustains": f.text(),
                "percentile": f"p{f.objective.percentile:g}",
                "limit_ms": f.objective.limit_ms,
                "objective": str(f.objective),
            }
            for f in analysis.capacities
        ],
        "latency_percentiles": [f"p{q:g}" for q in PERCENTILES],
        "labels": labels,
        "releases": release_data(analysis),
    }


def release_data(analysis: Analysis) -> dict[str, Any]:
    """ "Where it changed": what the report says of it, the changes, and each series by
    release (steady TPS with its interval, index of each first changed release)."""
    return {
        "sentences": no_change_sentences(analysis.releases)
        + disagreement_sentences(analysis.releases),
        "changes": [
            {"family": c.series, "scenario": c.scenario, "tier": c.tier, "threads": c.threads,
             "last_good": c.last_good, "first_changed": c.first_changed,
             "size": with_interval(c.size)}
            for c in analysis.changes
        ],
        "series": [
            {"family": s.family, "scenario": s.scenario, "tier": s.tier, "threads": s.threads,
             "releases": s.releases, "tps": [round(v.point, 2) for v in s.values],
             "low": [None if v.low is None else round(v.low, 2) for v in s.values],
             "high": [None if v.high is None else round(v.high, 2) for v in s.values],
             "changed_at": s.changed_at}
            for s in analysis.releases
        ],
    }  # fmt: skip


def _rounded(values: list[float | None]) -> list[float | None]:
    return [None if v is None else round(v, 3) for v in values]


def telemetry_data(analysis: Analysis) -> dict[str, Any]:
    """Each cell's timeline (TPS over the telemetry panels) and the per-operation table."""
    timelines = {
        key: {
            "label": found.label,
            "tps": _rounded(list(found.tps)),
            "steady_from": found.steady_from,
            "stalls": found.stalls,
            "waits": found.waits,
            "disturbed": found.disturbed,
            "panels": [
                {"title": p.title, "lines": {n: _rounded(v) for n, v in p.lines.items()}}
                for p in found.panels
            ],
        }
        for key, found in analysis.timelines.items()
    }
    notable = {name: cell.key for name, cell in analysis.notable}
    operations = [r.as_dict(2) for r in analysis.operations]
    return {"timelines": timelines, "notable": notable, "operations": operations}


def embed_json(data: Any) -> str:
    """JSON that is safe inside a <script> element whatever the names in it say."""
    text = json.dumps(data, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def as_html(lines: list[str]) -> str:
    """Markdown lines as HTML: CommonMark with tables, and any HTML in them shown as text
    (names are escaped already; this keeps it so whatever a section prints)."""
    return MarkdownIt("commonmark", {"html": False}).enable("table").render("\n".join(lines))


def render(analysis: Analysis, document: markdown.Document) -> str:
    environment = jinja2.Environment(
        loader=jinja2.FunctionLoader(
            lambda name: resources.files("oltplab.report").joinpath("templates", name).read_text()
        ),
        autoescape=True,
    )
    template = environment.get_template("report.html.j2")
    return template.render(
        title=document.title,
        summary=as_html(document.summary),
        sections=as_html(document.sections),
        percentiles=analysis.dataset.percentiles,
        data=embed_json(page_data(analysis)),
        plotly=plotly_js().replace("</script", "<\\/script"),
    )
