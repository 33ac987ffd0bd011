"""An export as `oltplab export` asks for it: one table of the analysis as CSV or JSON (or,
from a damaged ledger, what it still gives), or the figures in a tool's format, written
where -o says, with what it left out or lost said beside it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oltplab.analysis.changes import started
from oltplab.analysis.dataset import load
from oltplab.analysis.model import AnalysisOptions, analyse
from oltplab.analysis.points import Points
from oltplab.base.errors import OltplabError
from oltplab.importers.rebuild import salvage as salvaged
from oltplab.report import tool_formats
from oltplab.report.export import salvaged_rows, table_rows, to_csv, to_json
from oltplab.report.tool_formats import Flagged
from oltplab.store.files import check_output_file, write_atomic

TOOLS = ("otava", "bencher", "openmetrics")
Files = Sequence[tuple[Path | None, str]]  # (where, text); None: the text goes to stdout


@dataclass(frozen=True)
class Exported:
    """What an export gave: what it left out or lost (said first), its text when no file
    was asked for, the files it wrote, a table's rows (a tool's format counts none) and,
    for a history, the Otava command that reads it."""

    notes: list[str]
    stdout: str | None
    written: list[Path]
    rows: int | None = None
    next_step: str | None = None


def export_results(
    results: list[Path],
    format: str,
    table: str,
    output: Path | None,
    options: AnalysisOptions,
    cut_seconds: int | None,
    salvage: bool,
) -> Exported:
    """The export asked for, its files written; the text is returned instead when no file
    is named (-o), for the command to print."""
    if output is not None:
        check_output_file(output)
    if format in TOOLS:
        if salvage:
            raise OltplabError(f"--salvage exports the summary table as csv or json, not {format}")
        return _for_tool(results, format, output, cut_seconds, options.include_flagged)
    if salvage:
        columns, rows, notes = _salvaged(results, table)
    else:
        columns, rows, notes = _table(results, table, options, cut_seconds)
    text = to_csv(rows, columns) if format == "csv" else to_json(rows)
    return _delivered([(output, text)], notes, rows=len(rows))


def _salvaged(
    results: list[Path], table: str
) -> tuple[tuple[str, ...], list[dict[str, Any]], list[str]]:
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
) -> Exported:
    """A tool's format. Flagged cells left out are counted, and an export with nothing in
    it is refused with the reason, never written empty."""
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
        flagged = Flagged.of([points.dataset])
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
    runs = [
        tool_formats.RunPoints(path.name, started(path), Points(load([path], cut_seconds)))
        for path in sorted(results, key=started)
    ]
    flagged = Flagged.of(run.points.dataset for run in runs)
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
) -> Exported:
    """Each file written, but the one for stdout, which the command prints."""
    written = [path for path, _ in files if path is not None]
    for path, text in files:
        if path is not None:
            write_atomic(path, text)
    stdout = next((text for path, text in files if path is None), None)
    return Exported(notes, stdout, written, rows, next_step)
