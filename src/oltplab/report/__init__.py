"""Reports over one or more results directories: Markdown, PNG charts and one HTML page."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from oltplab.analysis.dataset import Dataset
from oltplab.errors import OltplabError
from oltplab.store.files import write_atomic


@dataclass(frozen=True)
class ReportOptions:
    baselines: list[str] = field(default_factory=list)
    threshold: float = 5.0
    relative_to: str | None = None
    compare: list[str] = field(default_factory=list)
    include_flagged: bool = False
    noise_floor: float | None = None

    def relative_engine(self, dataset: Dataset) -> str:
        return self._engine(dataset, self.relative_to, "--relative-to")

    def compared(self, dataset: Dataset) -> tuple[str, list[str] | None]:
        """The subject of the pairwise tables, and the engines it is set against (None: all)."""
        chosen = [self._engine(dataset, name, "--compare") for name in self.compare]
        if not chosen:
            return dataset.engine_names()[0], None
        return chosen[0], chosen[1:] or None

    @staticmethod
    def _engine(dataset: Dataset, chosen: str | None, option: str) -> str:
        names = dataset.engine_names()
        if chosen is None:
            return names[0]
        if chosen not in dataset.engines:
            raise OltplabError(
                f"{option} {chosen}: no such engine in these results ({', '.join(names)})"
            )
        return chosen


@dataclass(frozen=True)
class ReportFiles:
    markdown: Path
    html: Path
    charts: list[Path]


def build(dataset: Dataset, out: Path, options: ReportOptions) -> ReportFiles:
    # Imported here so that commands that write no report never load Matplotlib.
    from oltplab.report import charts, html, markdown

    if not dataset.cells:
        sources = ", ".join(map(str, dataset.sources))
        raise OltplabError(f"{sources}: no measured cells to report on")
    out.mkdir(parents=True, exist_ok=True)
    chart_files = charts.write_all(dataset, out / "charts", options)
    md = out / "report.md"
    write_atomic(md, markdown.render(dataset, options, [p.relative_to(out) for p in chart_files]))
    page = out / "report.html"
    write_atomic(page, html.render(dataset, options))
    return ReportFiles(md, page, chart_files)
