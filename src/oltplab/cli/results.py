"""Commands that read or bring in results: `status`, `import`, `report`, `export`, `clean`,
`rebuild` and `replay`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from oltplab.cli.app import console, tell
from oltplab.cli.options import bound
from oltplab.distribute.progress import status_told
from oltplab.importers.importing import ImportAsked
from oltplab.report import ReportAsked
from oltplab.report.exported import ExportAsked
from oltplab.report.replay_files import ReplayAsked

Results = Annotated[Path, typer.Argument(metavar="RESULTS", help="A results directory.")]


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
    tell(status_told(results))


@bound(ExportAsked)
def export(given: ExportAsked) -> None:
    """Export one table of a results directory as CSV or JSON, or its figures for another
    tool: Otava (a history of results directories), Bencher or OpenMetrics (--format)."""
    tell(given.exported())


@bound(ImportAsked)
def import_(given: ImportAsked) -> None:
    """Import existing sysbench results so that `report` and `export` can read them.

    Reads sysbench 0.4, 0.5, 1.0 and 1.1 outputs. Empty, truncated and erroneous files
    are imported as flagged cells, never skipped; files that look like sysbench output but
    cannot be read as a cell are listed with the reason. Importing the same tree again
    changes nothing. An oltplab results directory comes back as it ran: its engines' names,
    spec, runs and each cell's flags and notes from its run.json and journal.jsonl.
    """
    tell(given.imported())


@bound(ReportAsked)
def report(given: ReportAsked) -> None:
    """Write report.md, report.html (self-contained, works offline) and charts/*.png."""
    from oltplab.experiments.calibrate import floor_for

    with console.status("writing the report"):
        told = given.written(floor_for)
    tell(told)


def rebuild(results: Results) -> None:
    """Rebuild a damaged ledger from the journal and the raw files.

    Every write the ledger took is in journal.jsonl; the per-second samples and telemetry
    series come back from the raw outputs beside it. The damaged ledger is kept as
    ledger.sqlite.damaged-<time>; nothing is replaced until the new ledger is complete.
    """
    from oltplab.importers.rebuild import rebuild as rebuild_ledger

    with console.status("rebuilding the ledger"):
        told = rebuild_ledger(results).told()
    tell(told)


def clean(results: Results) -> None:
    """Free the disk a finished run no longer needs.

    Removes its engines' datadirs, snapshots, option files and scratch (`.work`, or the
    folder --work-dir gave it) and the results directory's own store of prepared datasets.
    The ledger, the raw outputs and run.json stay, so report, export and import work as
    before. A run with cells still to measure keeps everything: a resume needs it.
    """
    from oltplab.store.cleaning import clean as clean_results

    tell(clean_results(results).told())


@bound(ReplayAsked)
def replay(given: ReplayAsked) -> None:
    """Where the adaptive stopping rule would have stopped each recorded cell, the machine
    time that would save, and which verdicts of the report (progression, differences beyond
    the margin, findings) the shorter cells would change, per workload class (scenario
    and tier). Cells are judged on their engine-state signals where the results hold the
    engine probe's telemetry."""
    with console.status(f"replaying the {given.stop} rule"):
        told = given.replayed()
    tell(told)
