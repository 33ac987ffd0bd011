"""An export as `oltplab export` asks for it: one table of the analysis as CSV or JSON (or,
from a damaged ledger, what it still gives), or the figures in a tool's format, written
where -o says, with what it left out or lost said beside it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oltplab.analysis.dataset import load
from oltplab.base.asking import (
    MARGIN,
    argument,
    baseline_option,
    cut_option,
    margin_option,
    option,
    output_option,
)
from oltplab.base.errors import OltplabError
from oltplab.base.given import parse_percent
from oltplab.base.telling import Note, Said, Told, Verbatim
from oltplab.importers.rebuild import salvage as salvaged
from oltplab.store.files import check_output_file, write_atomic

if TYPE_CHECKING:  # the analysis loads SciPy, which --help never needs
    from oltplab.analysis.model import AnalysisOptions
    from oltplab.report.tool_formats import Flagged

TOOLS = ("otava", "bencher", "openmetrics")
Files = Sequence[tuple[Path | None, str]]  # (where, text); None: the text goes to stdout

Format = StrEnum("Format", ["csv", "json", "otava", "bencher", "openmetrics"])
ExportTable = StrEnum(
    "ExportTable",
    ["summary", "progression", "differences", "findings", "flags", "operations", "changes",
     "precision", "costs", "transactions"],
)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class ExportAsked:
    results: list[Path] = argument(
        "A results directory, or several read as one (shards of a run).", "RESULTS"
    )
    format: Format = option(
        Format.csv,
        "csv or json (a table); otava (a history of results directories: one row each, one "
        "column per point and metric, with the Otava config beside -o), bencher (Bencher "
        "Metric Format JSON) or openmetrics (one run's per-second series).",
        "--format",
        "-f",
    )
    table: ExportTable = option(
        ExportTable.summary,
        "summary (one row per measured cell), progression, differences, findings, flags, "
        "operations (per-transaction CPU, context switches, I/O and redo from the telemetry), "
        "changes (change points along each family's releases), precision (each comparison's "
        "verdict against the run's --margin) or costs (the version progression on the "
        "server's CPU and context switches per transaction).",
        "--table",
        "-t",
    )
    baseline: list[str] | None = baseline_option()
    margin: str = margin_option("list differences beyond ±PCT.", "5%")
    include_flagged: bool = option(
        False,
        "Let cells with validity flags count in the findings table, otava and bencher, which "
        "otherwise leave them out and count them on stderr (otava gives each flagged point a "
        "POINT/flags column).",
        "--include-flagged",
    )
    cut_seconds: int | None = cut_option()
    output: Path | None = output_option("Write here instead of stdout.")
    salvage: bool = option(
        False,
        "From a damaged ledger: one row per cell it still gives (the summary table), values "
        "it cannot vouch for left empty; what was lost is listed on stderr.",
        "--salvage",
    )

    def exported(self) -> Told:
        """The export asked for, its files written; its text is told instead when no file
        is named (-o), what it left out or lost beside it."""
        from oltplab.analysis.model import AnalysisOptions
        from oltplab.report.export import to_csv, to_json

        margin = parse_percent(self.margin, MARGIN)
        options = AnalysisOptions(self.baseline or [], margin, include_flagged=self.include_flagged)
        if self.output is not None:
            check_output_file(self.output)
        if self.format in TOOLS:
            if self.salvage:
                raise OltplabError(
                    f"--salvage exports the summary table as csv or json, not {self.format}"
                )
            return _for_tool(
                self.results, self.format, self.output, self.cut_seconds, self.include_flagged
            )
        if self.salvage:
            columns, rows, notes = _salvaged(self.results, self.table)
        else:
            columns, rows, notes = _table(self.results, self.table, options, self.cut_seconds)
        text = to_csv(rows, columns) if self.format == "csv" else to_json(rows)
        return _delivered([(self.output, text)], notes, rows=len(rows))


def _salvaged(
    results: list[Path], table: str
) -> tuple[tuple[str, ...], list[dict[str, Any]], list[str]]:
    from oltplab.report.export import salvaged_rows

    if table != "summary":
        raise OltplabError("--salvage exports the summary table only (--table summary)")
    if len(results) != 1:
        raise OltplabError("--salvage reads one damaged results directory at a time")
    found = salvaged(results[0])
    columns, rows = salvaged_rows(found.rows)
    return columns, rows, [f"lost: {problem}" for problem in found.problems]


def _table(
    results: list[Path], table: str, options: AnalysisOptions, cut_seconds: int | None
) -> tuple[tuple[str, ...], list[dict[str, Any]], list[str]]:
    from oltplab.analysis.model import analyse
    from oltplab.report.export import table_rows
    from oltplab.report.tool_formats import Flagged

    analysis = analyse(load(results, cut_seconds), options)
    columns, rows = table_rows(table, analysis)
    flagged = Flagged.of([analysis.dataset])
    # The one table that leaves flagged cells out (the others show them, flags beside).
    if table == "findings" and flagged.cells and not options.include_flagged:
        return columns, rows, [f"findings: {flagged.left_out('lets them count')}"]
    return columns, rows, []


def _for_tool(
    results: list[Path],
    format: str,
    output: Path | None,
    cut_seconds: int | None,
    include_flagged: bool,
) -> Told:
    """A tool's format. Flagged cells left out are counted, and an export with nothing in
    it is refused with the reason, never written empty."""
    from oltplab.analysis.points import Points
    from oltplab.report import tool_formats

    notes: list[str] = []
    next_step: str | None = None
    flagged: Flagged | None = None
    files: Files
    if format == "otava":
        if output is None:
            raise OltplabError(
                "--format otava needs -o FILE.csv: the Otava config written beside it names it"
            )
        files, flagged = _otava_files(results, output, cut_seconds, include_flagged)
        next_step = (
            f"Next: otava analyze --config-file {output.with_suffix('.otava.yaml')} "
            f"{tool_formats.OTAVA_TEST}"
        )
    elif format == "bencher":
        points = Points(load(results, cut_seconds))
        flagged = tool_formats.Flagged.of([points.dataset])
        text = tool_formats.bencher(points, include_flagged)
        if text is None:
            raise flagged.nothing_to_export(include_flagged)
        files = [(output, text)]
        if include_flagged and flagged.cells:
            notes.append(
                f"exported {flagged.cells} flagged cell(s) ({flagged.named}) in their points' "
                "figures: Bencher's format has no place for flags (--table flags lists them)"
            )
    else:
        files = [(output, _openmetrics(results, cut_seconds))]
    if flagged is not None and flagged.cells and not include_flagged:
        notes.append(flagged.left_out())
    return _delivered(files, notes, next_step=next_step)


def _openmetrics(results: list[Path], cut_seconds: int | None) -> str:
    from oltplab.report import tool_formats

    if len(results) != 1:
        raise OltplabError("--format openmetrics exports one run: give one results directory")
    series = tool_formats.openmetrics(load(results, cut_seconds))
    if series is None:
        raise OltplabError(
            f"nothing to export: no cell of {results[0]} has per-second samples with a "
            "time to stamp them"
        )
    return series


def _otava_files(
    results: list[Path], output: Path, cut_seconds: int | None, include_flagged: bool
) -> tuple[Files, Flagged]:
    """The history's CSV files beside -o and the Otava config that names them."""
    from oltplab.analysis.changes import started
    from oltplab.analysis.points import Points
    from oltplab.report import tool_formats

    runs = [
        tool_formats.RunPoints(path.name, started(path), Points(load([path], cut_seconds)))
        for path in sorted(results, key=started)
    ]
    flagged = tool_formats.Flagged.of(run.points.dataset for run in runs)
    history = tool_formats.otava(runs, output.name, include_flagged)
    if history is None:
        raise flagged.nothing_to_export(include_flagged)
    named = [(output.with_name(name), text) for name, text in history.csvs]
    named.append((output.with_suffix(".otava.yaml"), history.config))
    for path, _ in named:
        check_output_file(path)
    return named, flagged


def _delivered(
    files: Files, notes: list[str], rows: int | None = None, next_step: str | None = None
) -> Told:
    """Each file written, and what is told: what the export left out or lost, the text of
    the one for stdout, the files written (a table's with its rows) and, for a history,
    the Otava command that reads it, beside the output on stderr."""
    said: list[Said] = [Note(note) for note in notes]
    for path, text in files:
        if path is None:
            said.append(Verbatim(text))
        else:
            write_atomic(path, text)
    for path, _ in files:
        if path is not None:
            said.append(Note(f"wrote {path}" if rows is None else f"{rows} row(s) in {path}"))
    if next_step is not None:
        said.append(Note(next_step))
    return Told(tuple(said))
