"""Commands that measure (`run`, `rerun`, `reproduced`, `demo`, `calibrate`), the figures
calibrating keeps (`calibrations`) and the engines measured (`engines list`, `fetch`)."""

from __future__ import annotations

import sys

import typer

from oltplab.base.errors import EXIT_BAD_INPUT, OltplabError
from oltplab.cli.app import console, errors, report_outcome, run_and_report, say, tell
from oltplab.cli.display import display_for
from oltplab.cli.options import bound
from oltplab.engines.known import EnginesFetchAsked, EnginesListAsked, before_fetching, fetched
from oltplab.engines.serving import EnginesServeAsked
from oltplab.experiments.calibrate import CalibrateAsked, Calibrated, CalibrationAsked
from oltplab.experiments.machine_figures import MachineFiguresAsked
from oltplab.experiments.measuring import RunAsked
from oltplab.experiments.rerun import RerunAsked, run_again
from oltplab.experiments.session_spread import ReproducedAsked
from oltplab.experiments.until_answered import DemoAsked


@bound(RunAsked)
def run(given: RunAsked) -> None:
    """Run a benchmark matrix; the same command on the same directory resumes it.

    Cells already done are skipped and the cell a killed run had in flight runs again.
    Exits 1 when any cell failed (the final table lists them with their reasons).
    """
    run_and_report(given.request(lambda note: say(note, errors)))


@bound(RerunAsked)
def rerun(given: RerunAsked) -> None:
    """Run again what ORIGINAL's run.json describes, into a new results directory.

    The spec comes from run.json alone, which may have been written by someone else: the
    engines, hosts, paths, scripts and raw server options it will use are shown first, and
    the run starts only when you confirm (or pass --yes). What differs from the original run
    and could move the numbers (kernel, CPU, governor, sysbench and its scripts, engine
    binaries) is printed and written into the new run.json under "differences". Compare the
    two with `oltplab report ORIGINAL NEW`.
    """
    planned = given.planned()
    tell(planned.touches())
    if not given.yes and not sys.stdin.isatty():
        raise OltplabError(
            f"rerun {given.original}: confirm with --yes to run what it lists above "
            "(no terminal to ask on)"
        )
    if not given.yes and not typer.confirm("Start?", default=False):
        raise typer.Exit(EXIT_BAD_INPUT)
    again = run_again(planned, display_for(console))
    tell(again.told())
    report_outcome(given.results, again.outcome)


@bound(ReproducedAsked)
def reproduced(given: ReproducedAsked) -> None:
    """Whether REPEAT (and each of MORE) reproduces ORIGINAL within ±MARGIN% at every point
    both measured: `reproduced within 5%`, `not reproduced`, or `undecided` (with the
    repetitions that would decide), always with each point's interval. Where the runs
    compare engines, also the between-session spread of each comparison (each session's
    estimate within its run, their spread, and the estimate across sessions), stored for
    this host: `bisect` widens its verdicts by it. Exits 0 when reproduced, 1 when not, 5
    when undecided."""
    tell(given.told())


@bound(DemoAsked)
def demo(given: DemoAsked) -> None:
    """A small real matrix with the built-in spec: MySQL 8.0.31 and MariaDB 10.11.5; then
    one of its comparisons measured until it is decided (read-only at 4 threads, within
    ±5%, paired rounds for about a minute more, into RESULTS-decide), or said undecided
    with what would decide it."""
    request = given.request()
    run_and_report(request)
    tell(given.before_deciding())
    search = given.decide(request.spec, display_for(console))
    if search.answers:
        tell(given.decided(search))
    else:
        report_outcome(given.deciding, search.outcome)


@bound(CalibrateAsked)
def calibrate(given: CalibrateAsked) -> None:
    """Measure this host's noise floor: one engine as A and as B, in paired rounds.

    Any difference between A and B is noise; the widest bound of their 95% intervals is
    printed and stored for this host, order of rounds, engine and date. `oltplab report`
    quotes the one of its results' host and order nearest their date; `oltplab plan
    --margin` plans with the latest of the spec's order.
    """
    run_calibration(given.calibration())
    tell(given.next_step())


def run_calibration(asked: CalibrationAsked) -> None:
    """One calibration measured, its table printed and it stored (calibrate, and plan
    --calibrate)."""
    found = asked.measured(display_for(console))
    if not isinstance(found, Calibrated):  # a cell failed or it was interrupted: exits
        report_outcome(asked.results, found)
        return
    tell(found.floor.said())  # shown even when no interval could be stored
    tell(found.kept())


@bound(MachineFiguresAsked)
def calibrations(given: MachineFiguresAsked) -> None:
    """List what oltplab keeps about this machine between runs.

    Noise floors (`oltplab calibrate`: reports quote them, `plan --margin` plans with them)
    and between-session spreads (`oltplab reproduced`: `bisect` widens its verdicts by
    them), each with where and when it was measured, on how many rounds or sessions, and
    whether later commands use it: one from fewer than its minimum is kept, not used.
    """
    tell(given.told())


@bound(EnginesListAsked)
def engines_list(given: EnginesListAsked) -> None:
    """The engines oltplab knows: name, family, version, source and whether they are fetched."""
    tell(given.told())


@bound(EnginesServeAsked)
def engines_serve(given: EnginesServeAsked) -> None:
    """Serve one engine of the catalog in the foreground, provisioned as a run would (its
    option file from the intent, the benchmark account's rights on its database only), on
    every interface, until SIGTERM: what a container platform runs (deploy.kube.database)."""
    tell(given.served())


@bound(EnginesFetchAsked)
def engines_fetch(given: EnginesFetchAsked) -> None:
    """Download, unpack and checksum engine binaries into the cache (~/.cache/oltplab)."""
    for engine in given.engines():
        tell(before_fetching(engine))
        with console.status(f"fetching {engine.name}"):
            tell(fetched(engine))
