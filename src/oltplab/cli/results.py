"""Commands that read or bring in results: `status`, `import`, `report`, `export`, `clean`,
`rebuild` and `replay`."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from oltplab.base.errors import OltplabError
from oltplab.cli.app import (
    BaselineOption,
    CutOption,
    DifferencesMarginOption,
    IncludeFlaggedOption,
    ResultsOption,
    console,
    errors,
    flag,
    shown,
    unlike,
)
from oltplab.cli.display import failed_table, shards_table, status_table
from oltplab.cli.vocabulary import MARGIN, parse_percent
from oltplab.distribute.layout import is_distributed, shards_of
from oltplab.distribute.progress import shard_rows
from oltplab.store.directory import CHARTS, ResultsDir
from oltplab.store.files import check_output_file, write_atomic
from oltplab.store.ledger import Ledger
from oltplab.store.lock import ResultsLock, run_state
from oltplab.store.outputs import whole_folder
from oltplab.store.status import Status

if TYPE_CHECKING:
    from oltplab.report.tool_formats import Flagged


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
        _status_of(results[0])
        return
    rows = []
    for path in results:
        if is_distributed(path):
            rows += shard_rows(path)
        else:
            rows += [_row_of(shard) for shard in shards_of(path)]
    console.print(shards_table(rows))
    named = " ".join(shown(p) for p in results)
    console.print(
        f"Next: oltplab report {named} (or oltplab merge {named} -o DIR)",
        highlight=False,
        soft_wrap=True,
    )


def _status_of(results: Path) -> None:
    ledger = Ledger.open(results, create=False)
    try:
        counts = ledger.counts()
        failed = [row for row in ledger.cells() if row.status == Status.FAILED]
        runs = ledger.runs()
    finally:
        ledger.close()
    console.print(status_table(counts))
    if failed:
        console.print(failed_table(failed))
    if runs:
        last = runs[-1]
        console.print(
            f"last run: started {last.started_at}, {run_state(last.status, results)}",
            highlight=False,
            soft_wrap=True,
        )
    console.print(f"Next: oltplab report {results}", highlight=False)


def _row_of(path: Path) -> dict[str, str]:
    ledger = Ledger.open(path, create=False)
    try:
        counts, runs, shard = ledger.counts(), ledger.runs(), ledger.meta("shard") or "-"
    finally:
        ledger.close()
    state = run_state(runs[-1].status, path) if runs else "never run"
    return {"results": str(path), "shard": shard, "scheduler": "-", "node": "-",
            "state": state, **{k: str(v) for k, v in counts.items()}}  # fmt: skip


class Format(StrEnum):
    csv = "csv"
    json = "json"
    otava = "otava"
    bencher = "bencher"
    openmetrics = "openmetrics"


# What each tool format holds, and of how many results directories.
TOOL_FORMATS = {
    Format.otava: "a history: one row per results directory (oldest first), one column per "
    "point and metric, and the Otava config beside it (-o needed)",
    Format.bencher: "Bencher Metric Format: steady TPS with its 95% interval and latency",
    Format.openmetrics: "one run's per-second TPS and telemetry, timestamped",
}


class ExportTable(StrEnum):
    summary = "summary"
    progression = "progression"
    differences = "differences"
    findings = "findings"
    flags = "flags"
    operations = "operations"
    changes = "changes"
    precision = "precision"
    costs = "costs"
    transactions = "transactions"


def export(
    results: Annotated[
        list[Path],
        typer.Argument(
            metavar="RESULTS", help="A results directory, or several read as one (shards of a run)."
        ),
    ],
    format: Annotated[
        Format,
        typer.Option(
            "--format",
            "-f",
            help="csv or json (a table); otava (a history of results directories: one row "
            "each, one column per point and metric, with the Otava config beside -o), bencher "
            "(Bencher Metric Format JSON) or openmetrics (one run's per-second series).",
        ),
    ] = Format.csv,
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
    ] = ExportTable.summary,
    baseline: BaselineOption = None,
    margin: DifferencesMarginOption = "5%",
    include_flagged: Annotated[
        bool,
        flag(
            "--include-flagged",
            help="Let cells with validity flags count in the findings table, otava and "
            "bencher, which otherwise leave them out and count them on stderr (otava gives "
            "each flagged point a POINT/flags column).",
        ),
    ] = False,
    cut_seconds: CutOption = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
    salvage: Annotated[
        bool,
        flag(
            "--salvage",
            help="From a damaged ledger: one row per cell it still gives (the summary table), "
            "values it cannot vouch for left empty; what was lost is listed on stderr.",
        ),
    ] = False,
) -> None:
    """Export one table of a results directory as CSV or JSON, or its figures for another
    tool: Otava (a history of results directories), Bencher or OpenMetrics (--format)."""
    from oltplab.analysis.dataset import load
    from oltplab.analysis.model import AnalysisOptions, analyse
    from oltplab.report.export import salvaged_rows, table_rows, to_csv, to_json
    from oltplab.report.tool_formats import Flagged

    differences_pct = parse_percent(margin, MARGIN)
    if output is not None:
        check_output_file(output)
    if format in TOOL_FORMATS:
        if salvage:
            raise OltplabError(f"--salvage exports the summary table as csv or json, not {format}")
        _export_for_tool(results, format, output, cut_seconds, include_flagged)
        return
    if salvage:
        if table is not ExportTable.summary:
            raise OltplabError("--salvage exports the summary table only (--table summary)")
        if len(results) != 1:
            raise OltplabError("--salvage reads one damaged results directory at a time")
        from oltplab.importers.rebuild import salvage as salvaged

        found = salvaged(results[0])
        columns, rows = salvaged_rows(found.rows)
        for problem in found.problems:
            errors.print(f"lost: {problem}", highlight=False, markup=False, soft_wrap=True)
    else:
        options = AnalysisOptions(baseline or [], differences_pct, include_flagged=include_flagged)
        analysis = analyse(load(results, cut_seconds), options)
        columns, rows = table_rows(table.value, analysis)
        flagged = Flagged.of([analysis.dataset])
        # The one table that leaves flagged cells out (the others show them, flags beside).
        if table is ExportTable.findings and flagged.cells and not include_flagged:
            told = flagged.left_out("lets them count")
            errors.print(f"findings: {told}", highlight=False, markup=False, soft_wrap=True)
    text = to_csv(rows, columns) if format is Format.csv else to_json(rows)
    if output is None:
        sys.stdout.write(text)
    else:
        write_atomic(output, text)
        errors.print(f"{len(rows)} row(s) in {output}", highlight=False)


def _export_for_tool(
    results: list[Path],
    format: Format,
    output: Path | None,
    cut_seconds: int | None,
    include_flagged: bool,
) -> None:
    """Writes a tool's format. Flagged cells left out are counted on stderr, and an export
    with nothing in it is refused with the reason, never written empty."""
    from oltplab.analysis.dataset import load
    from oltplab.analysis.points import Points
    from oltplab.report import tool_formats

    if format is Format.otava:
        files, flagged = _otava_files(results, output, cut_seconds, include_flagged)
    elif format is Format.bencher:
        points = Points(load(results, cut_seconds))
        flagged = tool_formats.Flagged.of([points.dataset])
        text = tool_formats.bencher(points, include_flagged)
        if text is None:
            raise flagged.nothing_to_export(include_flagged)
        files = {output: text}
        if include_flagged and flagged.cells:
            errors.print(
                f"exported {flagged.cells} flagged cell(s) ({flagged.named}) in their points' "
                "figures: Bencher's format has no place for flags (--table flags lists them)",
                highlight=False, markup=False, soft_wrap=True,
            )  # fmt: skip
    else:
        if len(results) != 1:
            raise OltplabError("--format openmetrics exports one run: give one results directory")
        series = tool_formats.openmetrics(load(results, cut_seconds))
        if series is None:
            raise OltplabError(
                f"nothing to export: no cell of {results[0]} has per-second samples with a "
                "time to stamp them"
            )
        files, flagged = {output: series}, None
    if flagged is not None and flagged.cells and not include_flagged:
        errors.print(flagged.left_out(), highlight=False, markup=False, soft_wrap=True)
    for path, text in files.items():
        if path is None:
            sys.stdout.write(text)
        else:
            write_atomic(path, text)
            errors.print(f"wrote {path}", highlight=False, markup=False)
    if format is Format.otava and output is not None:
        errors.print(
            f"Next: otava analyze --config-file {output.with_suffix('.otava.yaml')} "
            f"{tool_formats.OTAVA_TEST}",
            highlight=False,
            markup=False,
        )


def _otava_files(
    results: list[Path], output: Path | None, cut_seconds: int | None, include_flagged: bool
) -> tuple[dict[Path | None, str], Flagged]:
    """The history's CSV files beside -o and the Otava config that names them."""
    from oltplab.analysis.changes import started
    from oltplab.analysis.dataset import load
    from oltplab.analysis.points import Points
    from oltplab.report import tool_formats

    if output is None:
        raise OltplabError(
            "--format otava needs -o FILE.csv: the Otava config written beside it names it"
        )
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
    return dict(named), flagged


def import_(
    source: Annotated[
        Path,
        typer.Argument(
            metavar="SOURCE",
            help="A tree of sysbench outputs: benchmark_logs, benchmark_logs_read_only, "
            "benchmark_remote_logs[_read_only], benchmark_logs_<workload>, or a folder "
            "holding several of them; any other layout with --map.",
        ),
    ],
    results: ResultsOption,
    map_file: Annotated[
        Path | None,
        typer.Option(
            "--map",
            help="A TOML file saying which files are which cells, for layouts that cannot "
            "be guessed (docs/tutorials/import-results.md: a mapping file).",
        ),
    ] = None,
) -> None:
    """Import existing sysbench results so that `report` and `export` can read them.

    Reads sysbench 0.4, 0.5, 1.0 and 1.1 outputs. Empty, truncated and erroneous files
    are imported as flagged cells, never skipped; files that look like sysbench output but
    cannot be read as a cell are listed with the reason. Importing the same tree again
    changes nothing. An oltplab results directory comes back as it ran: its engines' names,
    spec, runs and each cell's flags and notes from its run.json and journal.jsonl.
    """
    from oltplab.importers.ingest import import_tree
    from oltplab.importers.mapping import load_map
    from oltplab.importers.scan import scan_tree

    layout = load_map(map_file) if map_file is not None else None
    tree = scan_tree(source, layout, results)  # read before anything is made
    if tree.unrecognised:
        errors.print("Not imported:", highlight=False)
        for path, why in tree.unrecognised:
            errors.print(
                f"  {shown(path.relative_to(tree.source))}: {why}",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
    if not tree.groups:
        for warning in tree.warnings:
            errors.print(f"warning: {warning}", highlight=False, markup=False, soft_wrap=True)
        raise OltplabError(f"{source}: nothing imported: {tree.nothing_found()}")
    paths = ResultsDir(results)
    made = [] if paths.ledger.exists() else paths.ledger_files
    made += [] if paths.journal.exists() else [paths.journal]
    made += [] if paths.run_json.exists() else [paths.run_json]
    with ResultsLock(results):
        try:
            ledger = Ledger.open(results)
            try:
                report = import_tree(tree, ledger)
            finally:
                ledger.close()
        except BaseException:
            # An import that fails leaves no half-made ledger, and the folder's other files as
            # they were (the lock takes its file, and the folder if it made it).
            for path in made:
                path.unlink(missing_ok=True)
            raise
    for warning in report.warnings:
        errors.print(f"warning: {warning}", highlight=False, markup=False, soft_wrap=True)
    for earlier, rerun in tree.superseded:
        console.print(
            f"{shown(earlier.relative_to(tree.source))}: set aside, measured again in "
            f"{shown(rerun.name)}",
            highlight=False, markup=False, soft_wrap=True,
        )  # fmt: skip
    if report.recorded is not None:
        console.print(
            f"{shown(report.recorded)}: an oltplab results directory; its engine names, spec, "
            "runs and cells' flags and notes taken from its run.json and journal.jsonl",
            highlight=False, markup=False, soft_wrap=True,
        )  # fmt: skip
    if tree.warm_ups:
        console.print(
            f"{len(tree.warm_ups)} warm-up output(s) recognised and kept out of the cells, "
            "as the run that wrote them did",
            highlight=False,
        )
    console.print(
        f"{source}: {report.imported} cell(s) imported, {report.updated} updated, "
        f"{report.unchanged} unchanged, into {results}"
        + (
            f"; {len(tree.unrecognised)} file(s) not imported (listed)" if tree.unrecognised else ""
        ),
        soft_wrap=True,
    )
    if report.flagged:
        flags = Table(title="Flagged cells")
        flags.add_column("cell")
        flags.add_column("flags")
        for cell, marks in report.flagged:
            flags.add_row(cell, marks)
        console.print(flags)
    console.print(f"Next: oltplab report {results}", highlight=False)


def report(
    results: Annotated[
        list[Path], typer.Argument(metavar="RESULTS", help="One or more results directories.")
    ],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Report folder (default: FIRST_RESULTS/report)."),
    ] = None,
    baseline: BaselineOption = None,
    margin: DifferencesMarginOption = "5%",
    relative_to: Annotated[
        str | None, typer.Option(help="Engine that the relative chart normalises to (= 1.0).")
    ] = None,
    include_flagged: IncludeFlaggedOption = False,
    cut_seconds: CutOption = None,
    compare: Annotated[
        list[str] | None,
        typer.Option(
            help="Pairwise tables: the first engine given, against the others given "
            "(or against every other engine when only one is given)."
        ),
    ] = None,
) -> None:
    """Write report.md, report.html (self-contained, works offline) and charts/*.png."""
    from oltplab.report import build, charts

    differences_pct = parse_percent(margin, MARGIN)
    if len(results) > 1:
        unlike(results, refuse=False)
    folder = output or ResultsDir(results[0]).report
    # A results folder's own report folder lies inside it; any other must be apart from the
    # results read, as the folder is replaced whole.
    own = folder.resolve() in {ResultsDir(r).report.resolve() for r in results}
    # The chart painter starts first: its workers load Matplotlib while we analyse.
    with (
        whole_folder(folder, "report", [] if own else results) as partial,
        charts.painter() as painter,
    ):
        from oltplab.analysis.dataset import load
        from oltplab.analysis.model import AnalysisOptions, analyse
        from oltplab.experiments.calibrate import floor_for

        dataset = load(results, cut_seconds)
        options = AnalysisOptions(
            baseline or [],
            differences_pct,
            relative_to,
            compare or [],
            include_flagged,
            floor_for(dataset),
        )
        with console.status("writing the report"):
            files = build(analyse(dataset, options), partial, painter)
    markdown, page = folder / files.markdown.name, folder / files.html.name
    console.print(
        f"{markdown}\n{page}\n{len(files.charts)} chart(s) in {folder / CHARTS}",
        soft_wrap=True,
    )
    console.print(f"Next: open {page} in a browser, or read {markdown}")


def rebuild(
    results: Annotated[Path, typer.Argument(metavar="RESULTS", help="A results directory.")],
) -> None:
    """Rebuild a damaged ledger from the journal and the raw files.

    Every write the ledger took is in journal.jsonl; the per-second samples and telemetry
    series come back from the raw outputs beside it. The damaged ledger is kept as
    ledger.sqlite.damaged-<time>; nothing is replaced until the new ledger is complete.
    """
    if not results.is_dir():
        raise OltplabError(f"{results}: no such results folder")
    with ResultsLock(results), console.status("rebuilding the ledger"):
        from oltplab.importers.rebuild import rebuild as rebuild_ledger

        rebuilt = rebuild_ledger(results)
    counts = ", ".join(f"{n} {state}" for state, n in rebuilt.cells.items() if n)
    console.print(f"{rebuilt.ledger}: rebuilt ({counts or 'no cells'})", highlight=False)
    console.print(f"  per-second samples read back for {rebuilt.series_read} cell(s)")
    if rebuilt.set_aside:
        console.print(f"  the old ledger is kept as {rebuilt.set_aside}", highlight=False)
    if rebuilt.torn_lines:
        console.print(f"  {rebuilt.torn_lines} journal line(s) cut short by a kill were skipped")
    for lost in rebuilt.lost:
        errors.print(f"not rebuilt: {lost}", highlight=False, markup=False, soft_wrap=True)
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
    if not ResultsDir(results).ledger.is_file():
        raise OltplabError(f"{results}: no ledger here; name a results directory")
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
