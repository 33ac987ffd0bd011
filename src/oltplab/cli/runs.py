"""Commands that measure: `run`, `rerun`, `reproduced`, `demo` and `calibrate`."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from oltplab.analysis.comparability import alike_notes, unlike
from oltplab.base.errors import EXIT_BAD_INPUT, EXIT_REGRESSED, OltplabError
from oltplab.base.given import margin_pct, measure_of
from oltplab.base.stats import MIN_REPETITIONS
from oltplab.base.telling import Told
from oltplab.base.wording import report_hint
from oltplab.cli.app import (
    WEEK_SECONDS,
    AllowMismatchOption,
    MeasureOption,
    ResultsOption,
    console,
    errors,
    flag,
    report_outcome,
    run_and_report,
    say,
    tell,
)
from oltplab.cli.display import answers_table, display_for, noise_table, reproduction_table, touches
from oltplab.cli.options import bound
from oltplab.cli.vocabulary import margin_option
from oltplab.experiments.measuring import RunAsked
from oltplab.measure.request import RunRequest
from oltplab.spec import parse_spec
from oltplab.store.directory import ResultsDir

if TYPE_CHECKING:  # the analysis loads SciPy, which most commands never need
    from oltplab.analysis.reproduce import Reproduction
    from oltplab.experiments.calibrate import Calibrated, CalibrationAsked


@bound(RunAsked)
def run(given: RunAsked) -> None:
    """Run a benchmark matrix; the same command on the same directory resumes it.

    Cells already done are skipped and the cell a killed run had in flight runs again.
    Exits 1 when any cell failed (the final table lists them with their reasons).
    """
    run_and_report(given.request(lambda note: say(note, errors)))


@dataclass(frozen=True)
class RerunOptions:
    original: Annotated[
        Path,
        typer.Argument(
            metavar="ORIGINAL", help="A results directory written by `oltplab run` (has run.json)."
        ),
    ]
    results: ResultsOption
    yes: Annotated[
        bool,
        flag("--yes", "-y", help="Start without asking (what it touches is still shown)."),
    ] = False
    margin: Annotated[
        str | None,
        margin_option(
            "the repeat counts as the original's within ±PCT (two one-sided tests on the "
            "90% interval); default: margin_pct of the spec's compare section, 5."
        ),
    ] = None


@bound(RerunOptions)
def rerun(given: RerunOptions) -> None:
    """Run again what ORIGINAL's run.json describes, into a new results directory.

    The spec comes from run.json alone, which may have been written by someone else: the
    engines, hosts, paths, scripts and raw server options it will use are shown first, and
    the run starts only when you confirm (or pass --yes). What differs from the original run
    and could move the numbers (kernel, CPU, governor, sysbench and its scripts, engine
    binaries) is printed and written into the new run.json under "differences". Compare the
    two with `oltplab report ORIGINAL NEW`.
    """
    from oltplab.experiments.rerun import rerun_of, run_again

    asked = rerun_of(given.original, given.results)
    console.print(f"{ResultsDir(given.original).run_json} will use:", highlight=False)
    for line in touches(asked.request.spec, given.results):
        console.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)
    if not given.yes and not sys.stdin.isatty():
        raise OltplabError(
            f"rerun {given.original}: confirm with --yes to run what it lists above "
            "(no terminal to ask on)"
        )
    if not given.yes and not typer.confirm("Start?", default=False):
        raise typer.Exit(EXIT_BAD_INPUT)
    again = run_again(asked, display_for(console))
    for difference in again.differences:
        errors.print(f"[yellow]differs from the original run:[/yellow] {difference}")
    if not again.outcome.interrupted:
        _say(again.judged(margin_pct(given.margin, asked.request.spec.compare.margin_pct)))
    report_outcome(given.results, again.outcome)


def _say(found: Reproduction) -> None:
    console.print(reproduction_table(found))
    console.print(f"verdict: {found.verdict}", highlight=False)


@dataclass(frozen=True)
class ReproducedOptions:
    original: Annotated[
        Path, typer.Argument(metavar="ORIGINAL", help="The results directory measured first.")
    ]
    repeat: Annotated[
        Path, typer.Argument(metavar="REPEAT", help="The results directory measured again.")
    ]
    more: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="[MORE]...",
            help="More sessions of the same spec, each judged against ORIGINAL too.",
            show_default=False,
        ),
    ] = None
    margin: Annotated[str, margin_option("they count as the same within ±PCT.")] = "5%"
    measure: MeasureOption = "tps"
    allow_mismatch: AllowMismatchOption = False


@bound(ReproducedOptions)
def reproduced(given: ReproducedOptions) -> None:
    """Whether REPEAT (and each of MORE) reproduces ORIGINAL within ±MARGIN% at every point
    both measured: `reproduced within 5%`, `not reproduced`, or `undecided` (with the
    repetitions that would decide), always with each point's interval. Where the runs
    compare engines, also the between-session spread of each comparison (each session's
    estimate within its run, their spread, and the estimate across sessions), stored for
    this host: `bisect` widens its verdicts by it. Exits 0 when reproduced, 1 when not, 5
    when undecided."""
    from oltplab.analysis.reproduce import reproduction
    from oltplab.experiments.session_spread import between_sessions

    sessions = [given.original, given.repeat, *(given.more or [])]
    tell(Told(tuple(alike_notes(unlike(sessions, refuse=not given.allow_mismatch)))))
    chosen = measure_of(given.measure)
    statuses = set()
    for again in sessions[1:]:
        found = reproduction(given.original, again, margin_pct(given.margin, 5.0), chosen)
        _say(found)
        statuses.add(found.exit_status)
    spreads = between_sessions(sessions, chosen)
    if spreads is not None:
        console.print(f"\nBetween sessions, on {chosen.label}:", highlight=False)
        for said in spreads.lines():
            console.print(said, highlight=False, soft_wrap=True)
    console.print(f"Next: {report_hint(sessions)}", highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_REGRESSED if EXIT_REGRESSED in statuses else max(statuses))


@dataclass(frozen=True)
class DemoOptions:
    results: Annotated[Path, typer.Option("--results", "-r", help="Results directory.")] = Path(
        "runs/demo"
    )


@bound(DemoOptions)
def demo(given: DemoOptions) -> None:
    """A small real matrix with the built-in spec: MySQL 8.0.31 and MariaDB 10.11.5; then
    one of its comparisons measured until it is decided (read-only at 4 threads, within
    ±5%, paired rounds for about a minute more, into RESULTS-decide), or said undecided
    with what would decide it."""
    from oltplab.analysis.precision import UNKNOWN
    from oltplab.experiments.until_answered import DEMO_MARGIN_PCT, demo_decision

    text = resources.files("oltplab").joinpath("spec/demo.toml").read_text()
    spec = parse_spec(text, "demo spec")
    run_and_report(RunRequest(spec, text, "demo spec", given.results))
    results = given.results.with_name(f"{given.results.name}-decide")
    console.print(
        f"Deciding one comparison: paired rounds until it is DIFFERENT or SAME within "
        f"±{DEMO_MARGIN_PCT:g}%, for a minute at most (into {results})",
        highlight=False,
    )
    search = demo_decision(spec, results, display_for(console))
    if not search.answers:
        report_outcome(results, search.outcome)
        return
    console.print(answers_table(search.answers, search.rounds, search.stopped))
    for answer in search.answers:
        console.print(answer.describe(), highlight=False, soft_wrap=True)
        if answer.verdict == UNKNOWN:
            longer = results.with_name(f"{results.name}-longer")
            console.print(
                f"this host's rounds spread more than a minute can narrow to "
                f"±{DEMO_MARGIN_PCT:g}%; `oltplab run {ResultsDir(results).derived_spec} "
                f"--margin {DEMO_MARGIN_PCT:g}% --budget 10m -r {longer}` gives the same "
                "search longer",
                highlight=False,
                soft_wrap=True,
            )
    console.print(f"Next: oltplab report {results}", highlight=False)


class RoundsOrder(StrEnum):
    INTERLEAVED = "interleaved"
    ALTERNATING = "alternating"
    SLICED = "sliced"


@dataclass(frozen=True)
class CalibrateOptions:
    engine: Annotated[
        str, typer.Argument(metavar="ENGINE", help="A catalog engine, e.g. mariadb-10.11.5.")
    ]
    results: Annotated[
        Path | None, typer.Option("--results", "-r", help="Default: runs/calibrate-ENGINE.")
    ] = None
    repetitions: Annotated[
        int,
        typer.Option(
            min=MIN_REPETITIONS,
            max=1000,
            help=f"Rounds of A and B ({MIN_REPETITIONS} at least: fewer give no interval).",
        ),
    ] = 5
    seconds: Annotated[
        int, typer.Option(min=3, max=WEEK_SECONDS, help="Seconds per measurement.")
    ] = 30
    threads: Annotated[
        list[int] | None,
        typer.Option(min=1, max=10_000, help="Thread counts (repeat the option)."),
    ] = None
    workload: Annotated[str, typer.Option(help="The sysbench test.")] = "oltp_read_only"
    measure: MeasureOption = "tps"
    order: Annotated[
        RoundsOrder,
        typer.Option(
            help="How A and B take turns: sliced (both kept running, each round's cells at "
            "once in short time slots, isolated: as --margin searches and bisect measure), "
            "alternating (both kept running, cells back to back, isolated) or interleaved "
            "(a restart and warm-up per cell, as plain runs measure); a spec is planned, and "
            "a report quoted, with the calibration of its order."
        ),
    ] = RoundsOrder.SLICED


@bound(CalibrateOptions)
def calibrate(given: CalibrateOptions) -> None:
    """Measure this host's noise floor: one engine as A and as B, in paired rounds.

    Any difference between A and B is noise; the widest bound of their 95% intervals is
    printed and stored for this host, order of rounds, engine and date. `oltplab report`
    quotes the one of its results' host and order nearest their date; `oltplab plan
    --margin` plans with the latest of the spec's order.
    """
    from oltplab.experiments.calibrate import CalibrationAsked, calibration_folder

    results = given.results or calibration_folder(given.engine)
    threads, chosen = given.threads or [1, 4], measure_of(given.measure)
    run_calibration(
        CalibrationAsked(
            given.engine, results, given.repetitions, given.seconds, threads, given.workload,
            chosen, given.order,
        )
    )  # fmt: skip
    console.print("Next: oltplab plan SPEC --margin 3% (rounds and hours on this host)")


def run_calibration(asked: CalibrationAsked) -> None:
    """One calibration measured, its table printed and it stored (calibrate, and plan
    --calibrate)."""
    from oltplab.experiments.calibrate import Calibrated, measure_calibration

    found = measure_calibration(asked, display_for(console))
    if not isinstance(found, Calibrated):  # a cell failed or it was interrupted: exits
        report_outcome(asked.results, found)
        return
    floor = found.floor
    console.print(noise_table(asked.engine, floor.comparisons))
    for warning in floor.warnings():
        errors.print(warning, highlight=False, soft_wrap=True)
    stored = found.stored()
    console.print(
        f"noise floor on this host: ±{floor.value:.1f}% (stored in {stored} for reports and "
        f"plans of {asked.order} rounds; `oltplab calibrations` lists what is stored)",
        highlight=False,
        soft_wrap=True,
    )
    spreads = ", ".join(f"{k} {v:.1f}%" for k, v in floor.round_spread_pct.items())
    console.print(
        f"round-to-round spread of A against B: {spreads}; about {found.overhead_s:.0f} s a "
        "session beyond its warm-up and cells (stored for `oltplab plan --margin`)",
        highlight=False,
    )
    _say_margins(found)


def _say_margins(found: Calibrated) -> None:
    """Which margin to ask for here, from the round spread of the measure calibrated."""
    from oltplab.base.sizes import duration_text
    from oltplab.experiments.margin_advice import DEFAULT_BUDGET_MINUTES, which_margin

    chosen = found.asked.measure
    spread = found.floor.round_spread_pct.get(chosen.name)
    if spread is not None:
        per_round = found.round_seconds()
        table, said = which_margin(spread, per_round, DEFAULT_BUDGET_MINUTES * 60, chosen.label)
        tell(Told((table,)))
        console.print(f"{said} A round here took {duration_text(per_round)}.", highlight=False)
