"""Commands that read or bring in results: `status`, `import`, `report`, `export`, `clean`
and `rebuild`."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from oltplab.analysis.comparability import alike_notes, unlike
from oltplab.base.asking import MARGIN
from oltplab.base.errors import OltplabError
from oltplab.base.given import parse_percent
from oltplab.base.telling import Told
from oltplab.base.wording import shown
from oltplab.cli.app import (
    BaselineOption,
    CutOption,
    DifferencesMarginOption,
    IncludeFlaggedOption,
    ResultsOption,
    console,
    errors,
    flag,
    tell,
)
from oltplab.cli.display import failed_table, flagged_table, shards_table, status_table
from oltplab.cli.options import bound
from oltplab.distribute.layout import shards_of
from oltplab.distribute.progress import standing_of, status_rows
from oltplab.store.directory import CHARTS

if TYPE_CHECKING:  # they load the analysis (SciPy), which `status` and --help never need
    from oltplab.importers.ingest import ImportReport
    from oltplab.importers.scan import ScannedTree
    from oltplab.report.exported import Exported


def _said(text: str, out: Console = errors) -> None:
    """A line naming files or cells, printed as it is."""
    out.print(text, highlight=False, markup=False, soft_wrap=True)


def status(
    results: Annotated[
        list[Path],
        typer.Argument(
            metavar="RESULTS",
            help="A results directory, several (shards of one run, say), or a distributed "
            "run's directory (oltplab submit).",
        ),
    ],
) -> None:
    """How many cells are done, failed and pending, and why the failed ones failed; for a
    distributed run, each shard's scheduler state and cells too."""
    if len(results) == 1 and shards_of(results[0]) == results:
        standing = standing_of(results[0])
        console.print(status_table(standing.counts))
        if standing.failed:
            console.print(failed_table(standing.failed))
        if standing.last_run is not None:
            started, state = standing.last_run
            console.print(f"last run: started {started}, {state}", highlight=False, soft_wrap=True)
        console.print(f"Next: oltplab report {results[0]}", highlight=False)
        return
    console.print(shards_table(status_rows(results)))
    named = " ".join(shown(p) for p in results)
    said = f"Next: oltplab report {named} (or oltplab merge {named} -o DIR)"
    console.print(said, highlight=False, soft_wrap=True)


Format = StrEnum("Format", ["csv", "json", "otava", "bencher", "openmetrics"])
ExportTable = StrEnum(
    "ExportTable",
    ["summary", "progression", "differences", "findings", "flags", "operations", "changes",
     "precision", "costs", "transactions"],
)  # fmt: skip


@dataclass(frozen=True)
class ExportOptions:
    results: Annotated[
        list[Path],
        typer.Argument(
            metavar="RESULTS", help="A results directory, or several read as one (shards of a run)."
        ),
    ]
    format: Annotated[
        Format,
        typer.Option(
            "--format",
            "-f",
            help="csv or json (a table); otava (a history of results directories: one row "
            "each, one column per point and metric, with the Otava config beside -o), bencher "
            "(Bencher Metric Format JSON) or openmetrics (one run's per-second series).",
        ),
    ] = Format.csv
    table: Annotated[
        ExportTable,
        typer.Option(
            "--table",
            "-t",
            help="summary (one row per measured cell), progression, "
            "differences, findings, flags, operations (per-transaction CPU, context "
            "switches, I/O and redo from the telemetry), changes (change points along "
            "each family's releases), precision (each comparison's verdict against the "
            "run's --margin) or costs (the version progression on the server's "
            "CPU and context switches per transaction).",
        ),
    ] = ExportTable.summary
    baseline: BaselineOption = None
    margin: DifferencesMarginOption = "5%"
    include_flagged: Annotated[
        bool,
        flag(
            "--include-flagged",
            help="Let cells with validity flags count in the findings table, otava and "
            "bencher, which otherwise leave them out and count them on stderr (otava gives "
            "each flagged point a POINT/flags column).",
        ),
    ] = False
    cut_seconds: CutOption = None
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None
    salvage: Annotated[
        bool,
        flag(
            "--salvage",
            help="From a damaged ledger: one row per cell it still gives (the summary table), "
            "values it cannot vouch for left empty; what was lost is listed on stderr.",
        ),
    ] = False


@bound(ExportOptions)
def export(given: ExportOptions) -> None:
    """Export one table of a results directory as CSV or JSON, or its figures for another
    tool: Otava (a history of results directories), Bencher or OpenMetrics (--format)."""
    from oltplab.analysis.model import AnalysisOptions
    from oltplab.report.exported import export_results

    differences_pct = parse_percent(given.margin, MARGIN)
    options = AnalysisOptions(
        given.baseline or [], differences_pct, include_flagged=given.include_flagged
    )
    _say_exported(
        export_results(
            given.results,
            given.format,
            given.table,
            given.output,
            options,
            given.cut_seconds,
            given.salvage,
        )
    )


def _say_exported(exported: Exported) -> None:
    for note in exported.notes:
        _said(note)
    if exported.stdout is not None:
        sys.stdout.write(exported.stdout)
    for path in exported.written:
        if exported.rows is None:
            errors.print(f"wrote {path}", highlight=False, markup=False)
        else:
            errors.print(f"{exported.rows} row(s) in {path}", highlight=False)
    if exported.next_step is not None:
        errors.print(exported.next_step, highlight=False, markup=False)


@dataclass(frozen=True)
class ImportOptions:
    source: Annotated[
        Path,
        typer.Argument(
            metavar="SOURCE",
            help="A tree of sysbench outputs: benchmark_logs, benchmark_logs_read_only, "
            "benchmark_remote_logs[_read_only], benchmark_logs_<workload>, or a folder "
            "holding several of them; any other layout with --map.",
        ),
    ]
    results: ResultsOption
    map_file: Annotated[
        Path | None,
        typer.Option(
            "--map",
            help="A TOML file saying which files are which cells, for layouts that cannot "
            "be guessed (docs/tutorials/import-results.md: a mapping file).",
        ),
    ] = None


@bound(ImportOptions)
def import_(given: ImportOptions) -> None:
    """Import existing sysbench results so that `report` and `export` can read them.

    Reads sysbench 0.4, 0.5, 1.0 and 1.1 outputs. Empty, truncated and erroneous files
    are imported as flagged cells, never skipped; files that look like sysbench output but
    cannot be read as a cell are listed with the reason. Importing the same tree again
    changes nothing. An oltplab results directory comes back as it ran: its engines' names,
    spec, runs and each cell's flags and notes from its run.json and journal.jsonl.
    """
    from oltplab.importers.ingest import import_into
    from oltplab.importers.mapping import load_map
    from oltplab.importers.scan import scan_tree

    layout = load_map(given.map_file) if given.map_file is not None else None
    tree = scan_tree(given.source, layout, given.results)  # read before anything is made
    if tree.unrecognised:
        errors.print("Not imported:", highlight=False)
        for path, why in tree.unrecognised:
            _said(f"  {shown(path.relative_to(tree.source))}: {why}")
    if not tree.groups:
        for warning in tree.warnings:
            _said(f"warning: {warning}")
        raise OltplabError(f"{given.source}: nothing imported: {tree.nothing_found()}")
    _say_imported(given, tree, import_into(tree, given.results))


def _say_imported(given: ImportOptions, tree: ScannedTree, report: ImportReport) -> None:
    for warning in report.warnings:
        _said(f"warning: {warning}")
    for earlier, rerun in tree.superseded:
        _said(
            f"{shown(earlier.relative_to(tree.source))}: set aside, measured again in "
            f"{shown(rerun.name)}",
            console,
        )
    if report.recorded is not None:
        _said(
            f"{shown(report.recorded)}: an oltplab results directory; its engine names, spec, "
            "runs and cells' flags and notes taken from its run.json and journal.jsonl",
            console,
        )
    if tree.warm_ups:
        console.print(
            f"{len(tree.warm_ups)} warm-up output(s) recognised and kept out of the cells, "
            "as the run that wrote them did",
            highlight=False,
        )
    listed = f"; {len(tree.unrecognised)} file(s) not imported (listed)"
    console.print(
        f"{given.source}: {report.imported} cell(s) imported, {report.updated} updated, "
        f"{report.unchanged} unchanged, into {given.results}"
        + (listed if tree.unrecognised else ""),
        soft_wrap=True,
    )
    if report.flagged:
        console.print(flagged_table(report.flagged))
    console.print(f"Next: oltplab report {given.results}", highlight=False)


@dataclass(frozen=True)
class ReportOptions:
    results: Annotated[
        list[Path], typer.Argument(metavar="RESULTS", help="One or more results directories.")
    ]
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Report folder (default: FIRST_RESULTS/report)."),
    ] = None
    baseline: BaselineOption = None
    margin: DifferencesMarginOption = "5%"
    relative_to: Annotated[
        str | None, typer.Option(help="Engine that the relative chart normalises to (= 1.0).")
    ] = None
    include_flagged: IncludeFlaggedOption = False
    cut_seconds: CutOption = None
    compare: Annotated[
        list[str] | None,
        typer.Option(
            help="Pairwise tables: the first engine given, against the others given "
            "(or against every other engine when only one is given)."
        ),
    ] = None


@bound(ReportOptions)
def report(given: ReportOptions) -> None:
    """Write report.md, report.html (self-contained, works offline) and charts/*.png."""
    from oltplab.analysis.model import AnalysisOptions
    from oltplab.experiments.calibrate import floor_for
    from oltplab.report import report_over

    differences_pct = parse_percent(given.margin, MARGIN)
    if len(given.results) > 1:
        tell(Told(tuple(alike_notes(unlike(given.results, refuse=False)))))
    options = AnalysisOptions(
        given.baseline or [],
        differences_pct,
        given.relative_to,
        given.compare or [],
        given.include_flagged,
    )
    with console.status("writing the report"):
        files = report_over(given.results, given.output, options, given.cut_seconds, floor_for)
    console.print(
        f"{files.markdown}\n{files.html}\n{len(files.charts)} chart(s) in "
        f"{files.markdown.parent / CHARTS}",
        soft_wrap=True,
    )
    console.print(f"Next: open {files.html} in a browser, or read {files.markdown}")


def rebuild(
    results: Annotated[Path, typer.Argument(metavar="RESULTS", help="A results directory.")],
) -> None:
    """Rebuild a damaged ledger from the journal and the raw files.

    Every write the ledger took is in journal.jsonl; the per-second samples and telemetry
    series come back from the raw outputs beside it. The damaged ledger is kept as
    ledger.sqlite.damaged-<time>; nothing is replaced until the new ledger is complete.
    """
    from oltplab.importers.rebuild import rebuild as rebuild_ledger

    with console.status("rebuilding the ledger"):
        rebuilt = rebuild_ledger(results)
    counts = ", ".join(f"{n} {state}" for state, n in rebuilt.cells.items() if n)
    console.print(f"{rebuilt.ledger}: rebuilt ({counts or 'no cells'})", highlight=False)
    console.print(f"  per-second samples read back for {rebuilt.series_read} cell(s)")
    if rebuilt.set_aside:
        console.print(f"  the old ledger is kept as {rebuilt.set_aside}", highlight=False)
    if rebuilt.torn_lines:
        console.print(f"  {rebuilt.torn_lines} journal line(s) cut short by a kill were skipped")
    for lost in rebuilt.lost:
        _said(f"not rebuilt: {lost}")
    console.print(f"Next: oltplab status {results}", highlight=False)


def clean(
    results: Annotated[Path, typer.Argument(metavar="RESULTS", help="A results directory.")],
) -> None:
    """Free the disk a finished run no longer needs.

    Removes its engines' datadirs, snapshots, option files and scratch (`.work`, or the
    folder --work-dir gave it) and the results directory's own store of prepared datasets.
    The ledger, the raw outputs and run.json stay, so report, export and import work as
    before. A run with cells still to measure keeps everything: a resume needs it.
    """
    from oltplab.store.cleaning import clean as clean_results
    from oltplab.store.files import format_bytes

    cleaned = clean_results(results)
    if cleaned.unfinished:
        console.print(
            f"{results}: {cleaned.unfinished} cell(s) still to measure; nothing removed (a "
            "resume needs the engines' snapshots)",
            highlight=False,
        )
        console.print(f"Next: oltplab status {results}", highlight=False)
        return
    where = ", ".join(str(folder) for folder in cleaned.removed) or "nothing to remove"
    console.print(f"freed {format_bytes(cleaned.freed_bytes)}: {where}", highlight=False)
    console.print(f"kept: the ledger, raw outputs and run.json in {results}", highlight=False)
    console.print(f"Next: oltplab report {results}", highlight=False)
