"""The `oltplab` command line."""

from __future__ import annotations

import logging
import os
import sqlite3
import sys
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from oltplab.display import (
    RichDisplay,
    failed_table,
    noise_table,
    run_state,
    status_table,
    touches,
    tps_tables,
)
from oltplab.engines.catalog import CATALOG
from oltplab.engines.supplier import is_available, source_of, supply
from oltplab.errors import (
    EXIT_BAD_INPUT,
    EXIT_CELL_FAILED,
    EXIT_ENVIRONMENT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    OltplabError,
)
from oltplab.importers import import_folders, scan_tree
from oltplab.spec import Spec, load_spec, parse_spec
from oltplab.spec.sources import EngineSpec
from oltplab.store.files import check_output_file, os_problem, write_atomic
from oltplab.store.ledger import Ledger
from oltplab.store.lock import ResultsLock, holder
from oltplab.store.provenance import RUN_JSON, RunRecord, differences, read_run_json

if TYPE_CHECKING:  # the runner loads the engines' drivers, which reports never need
    from oltplab.runner import Outcome

app = typer.Typer(
    help="oltplab: benchmark MySQL-compatible engines with sysbench, reproducibly.\n\n"
    "Write a spec (see examples/quick.toml), then `oltplab run SPEC --results DIR`.\n\n"
    f"Exit codes: 0 done; {EXIT_CELL_FAILED} a cell failed (the final table says why); "
    f"{EXIT_BAD_INPUT} bad input (a spec, an argument, a file to read); {EXIT_ENVIRONMENT} "
    "the environment (disk full, permissions, a damaged ledger, a results folder another "
    f"oltplab writes to); {EXIT_INTERNAL} a bug in oltplab (run again with --debug and report "
    f"the traceback); {EXIT_INTERRUPTED} interrupted (run the same command again to resume).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
engines_app = typer.Typer(help="The engine catalog and the binary cache.", no_args_is_help=True)
app.add_typer(engines_app, name="engines")

console = Console()
errors = Console(stderr=True)
# Commands load the analysis (NumPy, SciPy) only when they use it: `status` and `--help`
# answer at once. Set by --debug: tracebacks are shown instead of one line.
DEBUG_ENV = "OLTPLAB_DEBUG"


@app.callback()
def _options(
    debug: Annotated[
        bool,
        typer.Option("--debug", help="Show the full traceback of an error instead of one line."),
    ] = False,
) -> None:
    if debug:
        os.environ[DEBUG_ENV] = "1"


ResultsOption = Annotated[
    Path, typer.Option("--results", "-r", help="Results directory (ledger, raw outputs, log).")
]


def _spec_engines(spec_path: Path | None) -> list[EngineSpec]:
    engines = [EngineSpec(name=name) for name in CATALOG]
    if spec_path is not None:
        engines += [e for e in load_spec(spec_path).engines if e.name not in CATALOG]
    return engines


@engines_app.command("list")
def engines_list(
    spec: Annotated[
        Path | None, typer.Option(help="Also list the engines this spec defines.")
    ] = None,
) -> None:
    """The engines oltplab knows: name, family, version, source and whether they are fetched."""
    table = Table(title="Engines")
    for column in ("name", "family", "version", "source", "fetched"):
        table.add_column(column)
    for engine in _spec_engines(spec):
        entry = CATALOG.get(engine.name)
        source = source_of(engine)
        kind = next(iter(source))
        table.add_row(
            engine.name,
            entry.family if entry else (engine.family or "detected on fetch"),
            entry.version if entry else (engine.version or "detected on fetch"),
            f"{kind}: {source[kind]}",
            "yes" if is_available(engine) else "no",
        )
    console.print(table)


@engines_app.command("fetch")
def engines_fetch(
    names: Annotated[list[str], typer.Argument(help="Engine names from `oltplab engines list`.")],
    spec: Annotated[
        Path | None, typer.Option(help="A spec whose own engines may be named too.")
    ] = None,
) -> None:
    """Download, unpack and checksum engine binaries into the cache (~/.cache/oltplab)."""
    known = {engine.name: engine for engine in _spec_engines(spec)}
    for name in names:
        if name not in known:
            raise OltplabError(
                f"unknown engine {name!r}: see `oltplab engines list` (or pass --spec)"
            )
    for name in names:
        with console.status(f"fetching {name}"):
            distribution = supply(known[name])
        lines = [
            f"{name}: {distribution.family} {distribution.version} at {distribution.basedir}",
            f"  sha256 {distribution.binary_sha256}  {distribution.server.name}",
        ]
        if distribution.archive_sha256:
            lines.append(f"  sha256 {distribution.archive_sha256}  (archive)")
        console.print("\n".join(lines), soft_wrap=True, highlight=False)


def _report_outcome(results: Path, outcome: Outcome) -> None:
    ledger = Ledger.open(results, create=False)
    try:
        cells = ledger.cells()
    finally:
        ledger.close()
    for table in tps_tables(cells):
        console.print(table)
    console.print(status_table(outcome.counts))
    if outcome.failed:
        console.print(failed_table(outcome.failed))
    console.print(f"Results in {results} (ledger.sqlite, raw outputs, oltplab.log)")
    console.print(f"Next: oltplab report {results}", highlight=False)
    if outcome.interrupted:
        errors.print("interrupted: run the same command again to resume")
        raise typer.Exit(130)
    if outcome.failed:
        raise typer.Exit(1)


def _run(spec: Spec, text: str, origin: str, results: Path, **options: Any) -> None:
    display = RichDisplay(console)
    from oltplab.runner import run as run_matrix

    outcome = run_matrix(spec, text, origin, results, display, **options)
    _report_outcome(results, outcome)


@app.command()
def run(
    spec: Annotated[Path, typer.Argument(help="The spec file (TOML).")],
    results: ResultsOption,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Run cells that failed in an earlier run again.")
    ] = False,
    prepare_endpoints: Annotated[
        bool,
        typer.Option(
            "--prepare",
            "--prepare-endpoints",
            help="Create the sbtest tables on endpoint engines that lack them (oltplab never "
            "writes to an endpoint unasked).",
        ),
    ] = False,
    cleanup: Annotated[
        bool,
        typer.Option(
            "--cleanup",
            help="After the run, drop the sbtest tables from endpoint engines (sysbench "
            "cleanup); nothing else there is touched.",
        ),
    ] = False,
    until_cv: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            help="Adaptive: repeat each cell group until the coefficient of "
            "variation of its TPS across repetitions is below this (e.g. 0.03).",
        ),
    ] = None,
    max_repetitions: Annotated[
        int, typer.Option(min=2, help="Adaptive: at most this many repetitions per cell.")
    ] = 10,
    no_telemetry: Annotated[
        bool,
        typer.Option(
            "--no-telemetry",
            help="Measure without the OS collectors and the engine probe (to check their "
            "overhead; bench/telemetry_overhead.py does).",
        ),
    ] = False,
) -> None:
    """Run a benchmark matrix; the same command on the same directory resumes it.

    Cells already done are skipped and the cell a killed run had in flight runs again.
    Exits 1 when any cell failed (the final table lists them with their reasons).
    """
    parsed = load_spec(spec)
    _run(
        parsed,
        spec.read_text(),
        str(spec),
        results,
        retry_failed=retry_failed,
        prepare_endpoints=prepare_endpoints,
        cleanup_endpoints=cleanup,
        until_cv=until_cv,
        max_repetitions=max_repetitions,
        telemetry=not no_telemetry,
        spec_base=spec.resolve().parent,
    )


@app.command()
def rerun(
    original: Annotated[
        Path, typer.Argument(help="A results directory written by `oltplab run` (has run.json).")
    ],
    results: ResultsOption,
    yes: Annotated[
        bool,
        typer.Option("--yes", "-y", help="Start without asking (what it touches is still shown)."),
    ] = False,
) -> None:
    """Run again what ORIGINAL's run.json describes, into a new results directory.

    The spec comes from run.json alone, which may have been written by someone else: the
    engines, hosts, paths and scripts it will use are shown first, and the run starts only
    when you confirm (or pass --yes). What differs from the original run and could move the
    numbers (kernel, CPU, governor, sysbench and its scripts, engine binaries) is printed and
    written into the new run.json under "differences". Compare the two with
    `oltplab report ORIGINAL NEW`.
    """
    recorded = read_run_json(original)
    if results.resolve() == original.resolve():
        raise OltplabError(f"--results {results}: must differ from {original} (the run to repeat)")
    spec_info = recorded["spec"]
    base = Path(spec_info["base"])
    spec = parse_spec(spec_info["text"], f"{original / RUN_JSON} (spec.text)", base)
    console.print(f"{original / RUN_JSON} will use:", highlight=False)
    for line in touches(spec, results):
        console.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)
    if not yes:
        if not sys.stdin.isatty():
            raise OltplabError(
                f"rerun {original}: confirm with --yes to run what it lists above "
                "(no terminal to ask on)"
            )
        if not typer.confirm("Start?", default=False):
            raise typer.Exit(EXIT_BAD_INPUT)
    display = RichDisplay(console)
    from oltplab.runner import run as run_matrix

    outcome = run_matrix(
        spec,
        spec_info["text"],
        f"rerun of {original}",
        results,
        display,
        telemetry=bool(recorded.get("telemetry", True)),
        spec_base=base,
        rerun_of={"results": str(original.resolve()), "spec_digest": spec_info.get("digest")},
    )
    with ResultsLock(results):
        repeat = RunRecord(results.resolve(), read_run_json(results))
        repeat.data["differences"] = differences(recorded, repeat.data)
        repeat.save()
    for difference in repeat.data["differences"]:
        errors.print(f"[yellow]differs from the original run:[/yellow] {difference}")
    _report_outcome(results, outcome)


@app.command()
def demo(
    results: Annotated[Path, typer.Option("--results", "-r", help="Results directory.")] = Path(
        "runs/demo"
    ),
) -> None:
    """A small real matrix with the built-in spec: MySQL 8.0.31 and MariaDB 10.11.5."""
    text = resources.files("oltplab").joinpath("specs/demo.toml").read_text()
    _run(parse_spec(text, "demo spec"), text, "demo spec", results)


@app.command()
def status(results: Annotated[Path, typer.Argument(help="A results directory.")]) -> None:
    """How many cells are done, failed and pending, and why the failed ones failed."""
    ledger = Ledger.open(results, create=False)
    try:
        counts = ledger.counts()
        failed = [row for row in ledger.cells() if row["status"] == "failed"]
        runs = ledger.runs()
    finally:
        ledger.close()
    console.print(status_table(counts))
    if failed:
        console.print(failed_table(failed))
    if runs:
        last = runs[-1]
        console.print(
            f"last run: started {last['started_at']}, {run_state(last['status'], holder(results))}",
            highlight=False,
            soft_wrap=True,
        )
    console.print(f"Next: oltplab report {results}", highlight=False)


class Format(StrEnum):
    csv = "csv"
    json = "json"


class ExportTable(StrEnum):
    summary = "summary"
    progression = "progression"
    differences = "differences"
    findings = "findings"
    flags = "flags"
    operations = "operations"


BaselineOption = Annotated[
    list[str] | None,
    typer.Option(
        "--baseline",
        help="Baseline engine of its family (repeat per family); "
        "default: each family's oldest version.",
    ),
]
CutOption = Annotated[
    int | None,
    typer.Option(
        min=0,
        help="Cut this many seconds from the start of every series instead of "
        "detecting the end of the warm-up (MSER-5).",
    ),
]
IncludeFlaggedOption = Annotated[
    bool,
    typer.Option(
        "--include-flagged", help="Let cells with validity flags count in the key findings."
    ),
]
ThresholdOption = Annotated[float, typer.Option(help="List differences beyond this many percent.")]


@app.command()
def export(
    results: Annotated[Path, typer.Argument(help="A results directory.")],
    format: Annotated[Format, typer.Option("--format", "-f", help="csv or json.")] = Format.csv,
    table: Annotated[
        ExportTable,
        typer.Option(
            "--table",
            "-t",
            help="summary (one row per measured cell), progression, "
            "differences, findings, flags or operations (per-transaction CPU, context "
            "switches, I/O and redo from the telemetry).",
        ),
    ] = ExportTable.summary,
    baseline: BaselineOption = None,
    threshold: ThresholdOption = 5.0,
    include_flagged: IncludeFlaggedOption = False,
    cut_seconds: CutOption = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
    salvage: Annotated[
        bool,
        typer.Option(
            "--salvage",
            help="From a damaged ledger: one row per cell it still gives (the summary table), "
            "values it cannot vouch for left empty; what was lost is listed on stderr.",
        ),
    ] = False,
) -> None:
    """Export one table of a results directory as CSV or JSON."""
    from oltplab.analysis.dataset import load
    from oltplab.analysis.model import AnalysisOptions, analyse
    from oltplab.export import SUMMARY_COLUMNS, salvaged_row, table_rows, to_csv, to_json

    if output is not None:
        check_output_file(output)
    if salvage:
        if table is not ExportTable.summary:
            raise OltplabError("--salvage exports the summary table only (--table summary)")
        from oltplab.store.rebuild import salvage as salvaged

        found = salvaged(results)
        columns, rows = SUMMARY_COLUMNS, [salvaged_row(row) for row in found.rows]
        for problem in found.problems:
            errors.print(f"lost: {problem}", highlight=False, markup=False, soft_wrap=True)
    else:
        options = AnalysisOptions(baseline or [], threshold, include_flagged=include_flagged)
        columns, rows = table_rows(table.value, analyse(load([results], cut_seconds), options))
    text = to_csv(rows, columns) if format is Format.csv else to_json(rows)
    if output is None:
        sys.stdout.write(text)
    else:
        write_atomic(output, text)
        errors.print(f"{len(rows)} row(s) in {output}", highlight=False)


@app.command("import")
def import_(
    source: Annotated[
        Path,
        typer.Argument(
            help="A tree of sysbench outputs: benchmark_logs, benchmark_logs_read_only, "
            "benchmark_remote_logs[_read_only], or a folder holding several of them."
        ),
    ],
    results: ResultsOption,
) -> None:
    """Import existing sysbench results so that `report` and `export` can read them.

    Empty, truncated and erroneous files are imported as flagged cells, never skipped.
    Importing the same tree again changes nothing.
    """
    folders = scan_tree(source)  # a tree that is not one is refused before anything is made
    with ResultsLock(results):
        ledger = Ledger.open(results)
        try:
            report = import_folders(source, folders, ledger)
        finally:
            ledger.close()
    console.print(
        f"{source}: {report.imported} cell(s) imported, {report.updated} updated, "
        f"{report.unchanged} unchanged, into {results}",
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


@app.command()
def report(
    results: Annotated[list[Path], typer.Argument(help="One or more results directories.")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Report folder (default: FIRST_RESULTS/report)."),
    ] = None,
    baseline: BaselineOption = None,
    threshold: ThresholdOption = 5.0,
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

    folder = output or results[0] / "report"
    if folder.exists() and not folder.is_dir():
        raise OltplabError(f"--output {folder}: is a file; the report needs a folder")
    # The chart painter starts first: its workers load Matplotlib while we analyse.
    with charts.painter() as painter:
        from oltplab.analysis.dataset import load
        from oltplab.analysis.model import AnalysisOptions, analyse
        from oltplab.calibrate import load_for

        dataset = load(results, cut_seconds)
        hosts = {run["host"]["hostname"] for run in dataset.runs if "host" in run}
        options = AnalysisOptions(
            baseline or [], threshold, relative_to, compare or [], include_flagged, load_for(hosts)
        )
        with console.status("writing the report"):
            files = build(analyse(dataset, options), folder, painter)
    console.print(
        f"{files.markdown}\n{files.html}\n{len(files.charts)} chart(s) in "
        f"{files.markdown.parent / 'charts'}",
        soft_wrap=True,
    )
    console.print(f"Next: open {files.html} in a browser, or read {files.markdown}")


@app.command()
def rebuild(results: Annotated[Path, typer.Argument(help="A results directory.")]) -> None:
    """Rebuild a damaged ledger from the journal and the raw files.

    Every write the ledger took is in journal.jsonl; the per-second samples and telemetry
    series come back from the raw outputs beside it. The damaged ledger is kept as
    ledger.sqlite.damaged-<time>; nothing is replaced until the new ledger is complete.
    """
    if not results.is_dir():
        raise OltplabError(f"{results}: no such results folder")
    with ResultsLock(results), console.status("rebuilding the ledger"):
        from oltplab.store.rebuild import rebuild as rebuild_ledger

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


@app.command()
def calibrate(
    engine: Annotated[str, typer.Argument(help="A catalog engine, e.g. mariadb-10.11.5.")],
    results: Annotated[
        Path | None, typer.Option("--results", "-r", help="Default: runs/calibrate-ENGINE.")
    ] = None,
    repetitions: Annotated[int, typer.Option(min=2, help="Rounds of A and B.")] = 5,
    seconds: Annotated[int, typer.Option(min=5, help="Seconds per measurement.")] = 30,
    threads: Annotated[
        list[int] | None, typer.Option(help="Thread counts (repeat the option).")
    ] = None,
    workload: Annotated[str, typer.Option(help="The sysbench test.")] = "oltp_read_only",
) -> None:
    """Measure this host's noise floor: one engine as A and as B, interleaved.

    Any difference between A and B is noise; the widest bound of their 95% intervals is
    printed, stored for this host, and shown by `oltplab report` next to its threshold.
    """
    from oltplab.analysis.dataset import load
    from oltplab.calibrate import calibration_spec, noise_floor, save

    text = calibration_spec(engine, repetitions, seconds, threads or [1, 4], workload)
    spec = parse_spec(text, f"calibrate {engine}")
    folder = results or Path("runs") / f"calibrate-{engine}"
    display = RichDisplay(console)
    from oltplab.runner import run as run_matrix

    outcome = run_matrix(spec, text, f"calibrate {engine}", folder, display)
    if outcome.failed or outcome.interrupted:
        _report_outcome(folder, outcome)
    floor = noise_floor(load([folder]), engine)
    console.print(noise_table(engine, floor.comparisons))
    save(floor, folder)
    console.print(f"noise floor on this host: ±{floor.value:.1f}% (stored for `oltplab report`)")


def _fail(message: str, code: int) -> None:
    one_line = " | ".join(part.strip() for part in message.splitlines() if part.strip())
    errors.print(f"error: {one_line}", highlight=False, markup=False, soft_wrap=True)
    sys.exit(code)


def main() -> None:
    # A log file on a full disk must not print tracebacks of its own.
    logging.raiseExceptions = False
    try:
        app()
    except KeyboardInterrupt:
        _fail("interrupted", EXIT_INTERRUPTED)
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        if isinstance(exc, OSError):
            exc = os_problem(exc)
        if isinstance(exc, OltplabError):
            _fail(str(exc), exc.exit_code)
        if isinstance(exc, sqlite3.Error):
            _fail(f"SQLite: {exc}", EXIT_ENVIRONMENT)
        _fail(
            f"internal error: {type(exc).__name__}: {exc}; run again with --debug for the "
            "traceback, and please report it",
            EXIT_INTERNAL,
        )
