"""`oltplab replay`: the adaptive stopping rule replayed on recorded seconds, and what it
would have saved and changed."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from oltplab.base.errors import OltplabError
from oltplab.base.sizes import duration_text
from oltplab.cli.app import WEEK_SECONDS, DifferencesMarginOption, console
from oltplab.cli.vocabulary import MARGIN, RESOLUTION, parse_percent, resolution_option
from oltplab.spec import ProtocolSpec
from oltplab.store.directory import REPLAY_CSV, REPLAY_JSON, SYSBENCH_OUTPUT, check_results
from oltplab.store.files import write_whole
from oltplab.store.outputs import check_replaceable

if TYPE_CHECKING:
    from oltplab.analysis.rule_replay import Replay

REPLAY_COLUMNS = ["cell", "engine", "scenario", "tier", "threads", "repetition", "measured_s",
                  "stopped_s", "settled", "ci_pct", "warm_up_cut_s", "mean_moved_pct",
                  "ran_whole_to_learn", "note"]  # fmt: skip
REPLAY_JSON_START = b'{\n  "rule": '  # as found.as_json() begins


# The rule's settings where neither the options nor the recorded spec give them: the
# spec's own defaults (ProtocolSpec.stop_target_pct, stop_min_seconds).
DEFAULT_TARGET_PCT = ProtocolSpec.model_fields["stop_target_pct"].default
DEFAULT_MIN_SECONDS = ProtocolSpec.model_fields["stop_min_seconds"].default


class StopRuleName(StrEnum):
    adaptive = "adaptive"


class HorizonName(StrEnum):
    learned = "learned"
    none = "none"


def replay(
    results: Annotated[
        list[Path],
        typer.Argument(metavar="RESULTS", help="Results directories or imported trees."),
    ],
    stop: Annotated[
        StopRuleName, typer.Option(help="The stopping rule to replay on the recorded seconds.")
    ] = StopRuleName.adaptive,
    resolution: Annotated[
        str | None,
        resolution_option(
            "stop a cell once its steady mean's 95% interval is within ±PCT (default: the "
            "spec's stop_target_pct, else 2%)."
        ),
    ] = None,
    min_seconds: Annotated[
        int | None,
        typer.Option(
            min=10,
            max=WEEK_SECONDS,
            help="Never stop a cell before this many seconds, nor on a shorter steady part "
            "(default: the spec's stop_min_seconds, else 60).",
        ),
    ] = None,
    max_seconds: Annotated[
        int | None,
        typer.Option(
            min=10,
            max=WEEK_SECONDS,
            help="Stop every cell here at the latest (default: its length).",
        ),
    ] = None,
    horizon: Annotated[
        HorizonName,
        typer.Option(
            help="learned: as a run stops cells, the first repetition of each block whole "
            "and the others not before the horizon it showed; none: the rule alone stops "
            "every cell (what trusting it without the horizon would change).",
        ),
    ] = HorizonName.learned,
    margin: DifferencesMarginOption = "5%",
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Where replay.csv goes (default: FIRST_RESULTS)."),
    ] = None,
) -> None:
    """Where the adaptive stopping rule would have stopped each recorded cell, the machine
    time that would save, and which verdicts of the report (progression, differences beyond
    the margin, findings) the shorter cells would change, per workload class (scenario
    and tier). Cells are judged on their engine-state signals where the results hold the
    engine probe's telemetry."""
    from oltplab.analysis.dataset import load
    from oltplab.analysis.model import AnalysisOptions
    from oltplab.analysis.rule_replay import replay as replay_rule
    from oltplab.base.stopping_rule import StopRule
    from oltplab.importers.naming import is_warm_up
    from oltplab.report.export import to_csv
    from oltplab.sysbench.reading import read_output

    given_target = None if resolution is None else parse_percent(resolution, RESOLUTION)
    for given in results:
        check_results(given)
    folder = output or results[0]
    csv_file, json_file = folder / REPLAY_CSV, folder / REPLAY_JSON
    check_replaceable(csv_file, ",".join(REPLAY_COLUMNS).encode(), REPLAY_CSV)
    check_replaceable(json_file, REPLAY_JSON_START, REPLAY_JSON)
    dataset = load(results)
    # The rule the run was given, unless the options ask for another.
    target = given_target or dataset.stop_target_pct or DEFAULT_TARGET_PCT
    least = min_seconds or dataset.stop_min_seconds or DEFAULT_MIN_SECONDS
    rule = StopRule(target, least, max_seconds or 10**9)
    console.print(
        f"The {stop} rule: a cell stops once its steady mean is known to ±{target:g}% (95%), "
        f"not before {least} s",
        highlight=False,
    )
    # The warm-ups oltplab kept beside the cells end by the rule too.
    outputs = sorted(
        p for r in results for p in r.rglob(f"*{SYSBENCH_OUTPUT}") if is_warm_up(p.name)
    )
    warm_ups = [read_output(path).tps for path in outputs if path.is_file()]
    with console.status(f"replaying the {stop} rule on {len(dataset.cells)} cells"):
        found = replay_rule(
            dataset,
            rule,
            AnalysisOptions([], parse_percent(margin, MARGIN)),
            warm_ups,
            horizon == HorizonName.learned,
        )
    if not found.cells:
        raise OltplabError(f"{results[0]}: no cell has per-second samples to replay")
    rows = [
        dict(zip(REPLAY_COLUMNS, (
            replayed.cell.key, replayed.cell.engine, replayed.cell.scenario, replayed.cell.tier,
            replayed.cell.threads, replayed.cell.repetition, replayed.measured_seconds,
            replayed.stop.seconds, "yes" if replayed.stop.settled else "no",
            None if replayed.stop.ci_pct is None else round(replayed.stop.ci_pct, 2),
            replayed.stop.cut, round(replayed.moved_pct, 2),
            "yes" if replayed.stop.horizon and replayed.stop.horizon.learning else "no",
            replayed.stop.describe(),
        ), strict=True))
        for replayed in found.cells
    ]  # fmt: skip
    # replay.json last: `plan --from` reads it, so it comes in once replay.csv has.
    write_whole(
        {
            csv_file: to_csv(rows, tuple(REPLAY_COLUMNS)).encode(),
            json_file: (json.dumps(found.as_json(), indent=2) + "\n").encode(),
        }
    )
    _print_replay_summary(found, stop)
    clear = [c for c in found.changes if c.beyond_resolution]
    close = len(found.changes) - len(clear)
    if clear:
        changed = Table(title=f"{len(clear)} verdict(s) the shorter cells change")
        for column in ("what", "row or finding", "as measured", "with the rule"):
            changed.add_column(column)
        for change in clear:
            changed.add_row(change.what, change.subject, change.before, change.after)
        console.print(changed)
    else:
        console.print("No verdict changes beyond the rule's resolution.")
    if close:
        apart = rule.target_ci_pct * 2**0.5
        console.print(
            f"{close} more within ±{apart:.1f}% of the line they crossed: closer than "
            f"cells known to ±{rule.target_ci_pct:g}% tell apart (a finer --resolution keeps "
            "them).",
            highlight=False,
        )
    console.print(
        f"Per cell: {csv_file}; totals and changes: {json_file}",
        highlight=False,
    )
    console.print(
        "Next: compare the verdicts above with your report before letting cells stop early; "
        f"oltplab plan SPEC --stop adaptive --from {folder} estimates a matrix with these "
        "shares",
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
    for totals in found.classes():
        within = f" (+{totals.within} within)" if totals.within else ""
        summary.add_row(
            totals.name,
            str(totals.cells),
            f"{100 * totals.saved_share:.0f}%",
            str(totals.unsettled),
            f"{totals.changed}{within}",
            f"{totals.largest_move_pct:.1f}%",
        )
    clear = sum(c.beyond_resolution for c in found.changes)
    summary.add_row(
        "all cells",
        str(len(found.cells)),
        f"{100 * found.saved_share:.0f}%",
        str(found.unsettled),
        str(clear),
        f"{max(abs(c.moved_pct) for c in found.cells):.1f}%",
        style="bold",
    )
    console.print(summary)
    console.print(
        f"cells: {duration_text(found.measured_seconds)} measured, "
        f"{duration_text(found.kept_seconds)} with the rule",
        highlight=False,
    )
    warm = found.warm_ups
    if warm.count:
        console.print(
            f"warm-ups: {warm.count}, {duration_text(warm.measured_seconds)} measured, "
            f"{duration_text(warm.kept_seconds)} with the rule "
            f"({100 * (1 - warm.kept_seconds / max(1, warm.measured_seconds)):.0f}% saved)",
            highlight=False,
        )
    if found.learn and found.later_share is None:
        console.print(
            "Every block here ran once: each cell is the first of its block and runs whole, so "
            "nothing is saved. Repetitions stop early once their block has run whole once "
            "(replay with --horizon none to see what the rule alone would change).",
            highlight=False,
        )
    elif found.learn:
        console.print(
            f"{found.learning} cell(s) ran whole as the first of their block; the others kept "
            f"{found.later_share:.0%} of their seconds.",
            highlight=False,
        )
