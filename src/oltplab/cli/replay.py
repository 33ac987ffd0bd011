"""`oltplab replay`: the adaptive stopping rule replayed on recorded seconds, and what it
would have saved and changed."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from oltplab.base.asking import MARGIN, RESOLUTION
from oltplab.base.given import parse_percent
from oltplab.cli.app import WEEK_SECONDS, DifferencesMarginOption, console
from oltplab.cli.options import bound
from oltplab.cli.vocabulary import resolution_option

if TYPE_CHECKING:
    from oltplab.analysis.rule_replay import Replay


class StopRuleName(StrEnum):
    adaptive = "adaptive"


class HorizonName(StrEnum):
    learned = "learned"
    none = "none"


@dataclass(frozen=True)
class ReplayOptions:
    results: Annotated[
        list[Path],
        typer.Argument(metavar="RESULTS", help="Results directories or imported trees."),
    ]
    stop: Annotated[
        StopRuleName, typer.Option(help="The stopping rule to replay on the recorded seconds.")
    ] = StopRuleName.adaptive
    resolution: Annotated[
        str | None,
        resolution_option(
            "stop a cell once its steady mean's 95% interval is within ±PCT (default: the "
            "spec's stop_target_pct, else 2%)."
        ),
    ] = None
    min_seconds: Annotated[
        int | None,
        typer.Option(
            min=10,
            max=WEEK_SECONDS,
            help="Never stop a cell before this many seconds, nor on a shorter steady part "
            "(default: the spec's stop_min_seconds, else 60).",
        ),
    ] = None
    max_seconds: Annotated[
        int | None,
        typer.Option(
            min=10,
            max=WEEK_SECONDS,
            help="Stop every cell here at the latest (default: its length).",
        ),
    ] = None
    horizon: Annotated[
        HorizonName,
        typer.Option(
            help="learned: as a run stops cells, the first repetition of each block whole "
            "and the others not before the horizon it showed; none: the rule alone stops "
            "every cell (what trusting it without the horizon would change).",
        ),
    ] = HorizonName.learned
    margin: DifferencesMarginOption = "5%"
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Where replay.csv goes (default: FIRST_RESULTS)."),
    ] = None


@bound(ReplayOptions)
def replay(given: ReplayOptions) -> None:
    """Where the adaptive stopping rule would have stopped each recorded cell, the machine
    time that would save, and which verdicts of the report (progression, differences beyond
    the margin, findings) the shorter cells would change, per workload class (scenario
    and tier). Cells are judged on their engine-state signals where the results hold the
    engine probe's telemetry."""
    from oltplab.report.replay_files import replay_input, replay_written

    target = None if given.resolution is None else parse_percent(given.resolution, RESOLUTION)
    prepared = replay_input(
        given.results, given.output, target, given.min_seconds, given.max_seconds
    )
    rule = prepared.rule
    console.print(
        f"The {given.stop} rule: a cell stops once its steady mean is known to "
        f"±{rule.target_ci_pct:g}% (95%), not before {rule.min_seconds} s",
        highlight=False,
    )
    with console.status(f"replaying the {given.stop} rule on {len(prepared.dataset.cells)} cells"):
        margin = parse_percent(given.margin, MARGIN)
        found = replay_written(prepared, margin, given.horizon == HorizonName.learned)
    _print_replay_summary(found, given.stop)
    _print_changes(found)
    console.print(
        f"Per cell: {prepared.csv_file}; totals and changes: {prepared.json_file}",
        highlight=False,
    )
    console.print(
        "Next: compare the verdicts above with your report before letting cells stop early; "
        f"oltplab plan SPEC --stop adaptive --from {prepared.csv_file.parent} estimates a "
        "matrix with these shares",
        highlight=False,
    )


def _print_replay_summary(found: Replay, stop: str) -> None:
    rule = found.rule
    learned = "horizon learned per block" if found.learn else "the rule alone"
    summary = Table(title=f"The {stop} rule at {rule.target_ci_pct:g}%, replayed ({learned})")
    columns = ("workload class", "cells", "saved", "unsettled", "verdicts changed",
               "largest mean move")  # fmt: skip
    for column in columns:
        summary.add_column(column, justify="left" if column == "workload class" else "right")
    *classes, whole = found.summary_rows()
    for row in classes:
        summary.add_row(*row)
    summary.add_row(*whole, style="bold")
    console.print(summary)
    for said in found.seconds_said():
        console.print(said, highlight=False)


def _print_changes(found: Replay) -> None:
    """The verdicts the shorter cells change, and how many more changed within the rule's
    resolution."""
    clear = [c for c in found.changes if c.beyond_resolution]
    if clear:
        changed = Table(title=f"{len(clear)} verdict(s) the shorter cells change")
        for column in ("what", "row or finding", "as measured", "with the rule"):
            changed.add_column(column)
        for change in clear:
            changed.add_row(change.what, change.subject, change.before, change.after)
        console.print(changed)
    else:
        console.print("No verdict changes beyond the rule's resolution.")
    if close := len(found.changes) - len(clear):
        target = found.rule.target_ci_pct
        console.print(
            f"{close} more within ±{target * 2**0.5:.1f}% of the line they crossed: closer "
            f"than cells known to ±{target:g}% tell apart (a finer --resolution keeps them).",
            highlight=False,
        )
