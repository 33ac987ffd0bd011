"""Reports over one or more results directories: Markdown, PNG charts and one HTML page,
each drawn from the same analysis, computed once; what `oltplab report` asks for, and what
it tells."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from oltplab.analysis.comparability import alike_notes, unlike
from oltplab.base.asking import (
    MARGIN,
    argument,
    baseline_option,
    cut_option,
    margin_option,
    option,
    output_option,
)
from oltplab.base.given import parse_percent
from oltplab.base.telling import Told
from oltplab.store.directory import CHARTS, REPORT_HTML, REPORT_MD, ResultsDir
from oltplab.store.files import write_atomic
from oltplab.store.outputs import whole_folder

if TYPE_CHECKING:  # Matplotlib and the analysis load only when a report is drawn, never
    # when a command's options are read from a module of this package
    from oltplab.analysis.dataset import Dataset
    from oltplab.analysis.model import Analysis, AnalysisOptions, QuotedFloor
    from oltplab.report.charts import Painter

# The calibrated noise floor of the hosts a dataset came from, if there is one (the
# experiments layer, above this one, keeps the calibrations).
NoiseFloorOf = Callable[["Dataset"], "QuotedFloor | None"]


@dataclass(frozen=True, kw_only=True)
class ReportAsked:
    results: list[Path] = argument("One or more results directories.", "RESULTS")
    output: Path | None = output_option("Report folder (default: FIRST_RESULTS/report).")
    baseline: list[str] | None = baseline_option()
    margin: str = margin_option("list differences beyond ±PCT.", "5%")
    relative_to: str | None = option(None, "Engine that the relative chart normalises to (= 1.0).")
    include_flagged: bool = option(
        False, "Let cells with validity flags count in the key findings.", "--include-flagged"
    )
    cut_seconds: int | None = cut_option()
    compare: list[str] | None = option(
        None,
        "Pairwise tables: the first engine given, against the others given (or against every "
        "other engine when only one is given).",
    )

    def written(self, floor_for: NoiseFloorOf) -> Told:
        """The report written, what sets its runs apart said first, and where its files are."""
        from oltplab.analysis.model import AnalysisOptions

        margin = parse_percent(self.margin, MARGIN)
        notes = alike_notes(unlike(self.results, refuse=False)) if len(self.results) > 1 else []
        options = AnalysisOptions(
            self.baseline or [], margin, self.relative_to, self.compare or [], self.include_flagged
        )
        files = report_over(self.results, self.output, options, self.cut_seconds, floor_for)
        where = f"{len(files.charts)} chart(s) in {files.markdown.parent / CHARTS}"
        return Told(
            (*notes, str(files.markdown), str(files.html), where),
            f"open {files.html} in a browser, or read {files.markdown}",
        )


@dataclass(frozen=True)
class ReportFiles:
    markdown: Path
    html: Path
    charts: list[Path]


def build(analysis: Analysis, out: Path, painter: Painter | None = None) -> ReportFiles:
    """Every report file; the charts are drawn by the painter given (started before the
    analysis, so that its workers are ready), else by one started here."""
    from oltplab.report import charts, html, markdown

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
    from oltplab.analysis.dataset import load
    from oltplab.analysis.model import analyse
    from oltplab.report import charts

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
