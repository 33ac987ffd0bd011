"""Reports over one or more results directories: Markdown, PNG charts and one HTML page,
each drawn from the same analysis, computed once."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from oltplab.analysis.dataset import Dataset, load
from oltplab.analysis.model import Analysis, AnalysisOptions, QuotedFloor, analyse
from oltplab.report import charts
from oltplab.report.charts import Painter
from oltplab.store.directory import CHARTS, REPORT_HTML, REPORT_MD, ResultsDir
from oltplab.store.files import write_atomic
from oltplab.store.outputs import whole_folder

# The calibrated noise floor of the hosts a dataset came from, if there is one (the
# experiments layer, above this one, keeps the calibrations).
NoiseFloorOf = Callable[[Dataset], QuotedFloor | None]


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


def report_over(
    results: list[Path],
    output: Path | None,
    options: AnalysisOptions,
    cut_seconds: int | None,
    floor_for: NoiseFloorOf,
) -> ReportFiles:
    """The report over these results directories, in `output` (default: the first one's
    report folder), which it replaces whole; the files named where they end up."""
    folder = output or ResultsDir(results[0]).report
    # A results folder's own report folder lies inside it; any other must be apart from the
    # results read, as the folder is replaced whole.
    own = folder.resolve() in {ResultsDir(r).report.resolve() for r in results}
    # The chart painter starts first: its workers load Matplotlib while we analyse.
    with (
        whole_folder(folder, "report", [] if own else results) as partial,
        charts.painter() as painter,
    ):
        dataset = load(results, cut_seconds)
        analysis = analyse(dataset, replace(options, noise_floor=floor_for(dataset)))
        files = build(analysis, partial, painter)
    return ReportFiles(
        folder / files.markdown.name,
        folder / files.html.name,
        [folder / CHARTS / chart.name for chart in files.charts],
    )
