"""Checks that numbers never contradict themselves in what oltplab writes: no estimate
outside its own interval, and no `nan`, in the Markdown, the HTML page's data and every
export table of a results directory."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from oltplab.analysis.dataset import load
from oltplab.analysis.estimate import Estimate
from oltplab.analysis.model import Analysis, AnalysisOptions, analyse
from oltplab.report import html, markdown
from oltplab.report.export import TABLES, table_rows, to_csv, to_json

_NUMBER = r"[-+]?\d[\d,]*(?:\.\d+)?"
# "1,234 [1,201, 1,266]", "-2.2% [-2.8, -1.7]", "3.0x [2.9x, 3.1x]": a point and its interval.
PRINTED = re.compile(rf"({_NUMBER})(%|x)? \[({_NUMBER})x?, ({_NUMBER})x?\]")
NAN = re.compile(r"\bnan\b", re.IGNORECASE)
# Export columns that hold a point and the two ends of its interval.
EXPORTED = [
    ("tps", "tps_ci_low", "tps_ci_high"),
    ("diff_pct", "ci_low_pct", "ci_high_pct"),
    ("cpu_us_per_txn", "cpu_us_per_txn_ci_low", "cpu_us_per_txn_ci_high"),
]
PAGE = [("tps", "tps_low", "tps_high")]
DATA_ELEMENT = '<script type="application/json" id="data">'


def _value(text: str) -> float:
    return float(text.replace(",", ""))


def printed_contradictions(text: str) -> list[str]:
    """Every "point [low, high]" in a text whose point lies outside its interval."""
    return [
        m.group(0)
        for m in PRINTED.finditer(text)
        if not _value(m.group(3)) <= _value(m.group(1)) <= _value(m.group(4))
    ]


def row_contradictions(rows: list[dict[str, Any]], triples: list[tuple[str, str, str]]) -> list:
    found = []
    for row in rows:
        for point, low, high in triples:
            if row.get(low) is not None and not row[low] <= row[point] <= row[high]:
                found.append({k: row[k] for k in (point, low, high)})
    return found


def estimates(value: Any, seen: set[int] | None = None) -> Iterator[Estimate]:
    """Every Estimate reachable from an analysis value."""
    seen = set() if seen is None else seen
    if id(value) in seen or isinstance(value, str | bytes | int | float | type(None)):
        return
    seen.add(id(value))
    if isinstance(value, Estimate):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from estimates(getattr(value, f.name), seen)
    elif isinstance(value, dict):
        for item in value.values():
            yield from estimates(item, seen)
    elif isinstance(value, list | tuple | set):
        for item in value:
            yield from estimates(item, seen)


def analysis_problems(analysis: Analysis) -> list[str]:
    problems = []
    for e in estimates([analysis.values, analysis.progression, analysis.findings,
                        analysis.relative, analysis.stability, analysis.repetitions,
                        analysis.pairwise]):  # fmt: skip
        if any(v is not None and math.isnan(v) for v in (e.point, e.low, e.high)):
            problems.append(f"estimate with nan: {e}")
        elif e.low is not None and e.high is not None and not e.low <= e.point <= e.high:
            problems.append(f"estimate outside its interval: {e}")
    md = markdown.render(analysis, [])
    problems += [f"report.md prints nan: {m.group(0)!r}" for m in NAN.finditer(md)]
    problems += [f"report.md: {text}" for text in printed_contradictions(md)]
    page = html.embed_json(html.page_data(analysis))
    problems += [f"report.html data has {m.group(0)!r}" for m in NAN.finditer(page)]
    problems += [
        f"report.html point outside its interval: {row}"
        for row in row_contradictions(json.loads(page)["points"], PAGE)
    ]
    for table in TABLES:
        columns, rows = table_rows(table, analysis)
        for kind, text in (("csv", to_csv(rows, columns)), ("json", to_json(rows))):
            problems += [f"export {table} {kind} has {m.group(0)!r}" for m in NAN.finditer(text)]
        problems += [f"export {table}: {row}" for row in row_contradictions(rows, EXPORTED)]
    return problems


def results_problems(results: Path) -> list[str]:
    """What contradicts itself in everything oltplab would write for a results directory."""
    dataset = load([results], None)
    if not dataset.cells:
        return []
    return [f"{results}: {p}" for p in analysis_problems(analyse(dataset, AnalysisOptions()))]


def written_problems(root: Path) -> list[str]:
    """`nan` or a contradicted interval in report and export files already written under
    root (the HTML page: its data, not the Plotly code, which has its own NaN)."""
    problems = []
    for path in root.rglob("*"):
        if not path.is_file() or path.suffix not in {".md", ".html", ".csv", ".json"}:
            continue
        if path.suffix in {".md", ".html"} and not path.name.startswith("report"):
            continue
        if path.suffix == ".json" and path.name in {"run.json", "snapshot.json"}:
            continue
        text = path.read_text(errors="replace")
        if path.suffix == ".html":
            start = text.find(DATA_ELEMENT)
            text = text[start : text.find("</script>", start)] if start >= 0 else ""
        problems += [f"{path}: {m.group(0)!r}" for m in NAN.finditer(text)]
        if path.suffix == ".md":
            problems += [f"{path}: {t}" for t in printed_contradictions(text)]
    return problems
