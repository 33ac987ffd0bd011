"""The command line's shared parts: the Typer apps, the consoles, the options several
commands take, and how a finished run is reported."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from typer.core import TyperCommand, TyperGroup

from oltplab.base.errors import (
    EXIT_BAD_INPUT,
    EXIT_CELL_FAILED,
    EXIT_ENVIRONMENT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_UNDECIDED,
)
from oltplab.base.telling import Told
from oltplab.cli.display import display_for, show
from oltplab.measure.request import RunRequest
from oltplab.report.run_tables import outcome_told

if TYPE_CHECKING:  # the runner loads the engines' drivers, which reports never need
    from oltplab.measure.runner import RunOutcome


# Typer carries its own copy of Click: its context and option types, not click's.
def _plain(help_option: Any) -> Any:
    """`--help` shown as the flag it is, without the `<bool>` Click gives a flag."""
    if help_option is not None:
        help_option.metavar = ""
    return help_option


class Group(TyperGroup):
    def get_help_option(self, ctx: Any) -> Any:
        return _plain(super().get_help_option(ctx))


class Command(TyperCommand):
    def get_help_option(self, ctx: Any) -> Any:
        return _plain(super().get_help_option(ctx))


app = typer.Typer(
    help="oltplab: benchmark MySQL-compatible engines with sysbench, reproducibly.\n\n"
    "Write a spec (see examples/quick.toml), then `oltplab run SPEC --results DIR`.\n\n"
    f"Exit codes: 0 done; {EXIT_CELL_FAILED} a cell failed (the final table says why) or a "
    "regression was found; "
    f"{EXIT_BAD_INPUT} bad input (a spec, an argument, a file to read); {EXIT_ENVIRONMENT} "
    "the environment (disk full, permissions, a damaged ledger, a results folder another "
    f"oltplab writes to); {EXIT_INTERNAL} a bug in oltplab (run again with --debug and report "
    f"the traceback); {EXIT_UNDECIDED} undecided (gate, reproduced and bisect: the intervals "
    f"cannot tell yet); {EXIT_INTERRUPTED} interrupted (run the same command again to "
    "resume).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=Group,
)
engines_app = typer.Typer(
    help="The engine catalog and the binary cache.", no_args_is_help=True, cls=Group
)
app.add_typer(engines_app, name="engines")

console = Console()
errors = Console(stderr=True)


def tell(told: Told) -> None:
    """What a command's work tells, drawn on the two consoles (`cli.display.show`)."""
    show(told, console, errors)


def say(text: str, to: Console = console) -> None:
    """A line as it is: no markup read into it, no highlighting, no wrapping."""
    to.print(text, highlight=False, markup=False, soft_wrap=True)


# Commands load the analysis (NumPy, SciPy) only when they use it: `status` and `--help`
# answer at once. Set by --debug: tracebacks are shown instead of one line.
DEBUG_ENV = "OLTPLAB_DEBUG"


@app.callback()
def _options(
    debug: Annotated[
        bool,
        typer.Option(
            "--debug", metavar="", help="Show the full traceback of an error instead of one line."
        ),
    ] = False,
) -> None:
    if debug:
        os.environ[DEBUG_ENV] = "1"


def report_outcome(results: Path, outcome: RunOutcome) -> None:
    tell(outcome_told(results, outcome))


def run_and_report(request: RunRequest) -> None:
    """The matrix, or one shard of it between its canaries, or a search, then its tables."""
    from oltplab.experiments.measuring import after_run, floor_note

    display = display_for(console)
    if (note := floor_note(request)) is not None:
        say(note, errors)
    if request.shard is not None:
        from oltplab.distribute.shard_canary import run_shard

        outcome = run_shard(request, display)
    elif request.spec.protocol.target_ci_pct is not None:
        from oltplab.experiments.until_answered import measure_until_answered

        search = measure_until_answered(request, display)
        outcome = search.outcome
        tell(Told(search.said()))
    else:
        from oltplab.measure.runner import run as run_matrix

        outcome = run_matrix(request, display)
    tell(after_run(request, outcome.interrupted))
    report_outcome(request.results, outcome)
