"""Reports over one or more results directories: Markdown, PNG charts and one HTML page,
each drawn from the same analysis, computed once."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from oltplab.analysis.model import Analysis
from oltplab.report import charts
from oltplab.report.charts import Painter
from oltplab.store.directory import CHARTS, REPORT_HTML, REPORT_MD
from oltplab.store.files import write_atomic


@dataclass(frozen=True)
class ReportFiles:
    markdown: Path
    html: Path
    charts: list[Path]


def build(analysis: Analysis, out: Path, painter: Painter | None = None) -> ReportFiles:
    """Every report file; the charts are drawn by the painter given (started before the
    analysis, so that its workers are ready), else by one started here."""
    from oltplab.report import html, markdown

    out.mkdir(parents=True, exist_ok=True)
    (out / CHARTS).mkdir(exist_ok=True)
    planned = charts.plan(analysis, out / CHARTS)
    with contextlib.ExitStack() as stack:
        drawer = painter or stack.enter_context(charts.painter())
        drawer.draw(planned)
        md, page = out / REPORT_MD, out / REPORT_HTML
        document = markdown.document(analysis, [c.path.relative_to(out) for c in planned])
        write_atomic(md, markdown.text(document))
        write_atomic(page, html.render(analysis, document))
        drawn = drawer.finish()
    return ReportFiles(md, page, drawn)
