"""The command line's shared parts: the Typer apps, the consoles, the options several
commands take, and how a finished run is reported."""

from __future__ import annotations

import os
import re
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
    OltplabError,
)
from oltplab.base.telling import Told
from oltplab.cli.display import display_for, failed_table, show, status_table, throughput_tables
from oltplab.cli.vocabulary import margin_option
from oltplab.measure.request import RunRequest
from oltplab.store.ledger import Ledger

if TYPE_CHECKING:  # the runner loads the engines' drivers, which reports never need
    from oltplab.analysis.comparability import Traits
    from oltplab.base.metrics import Measure
    from oltplab.measure.runner import RunOutcome


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def shown(name: object) -> str:
    """A file name as one line of output: a newline or other control character in it is
    printed escaped (\\n), so that one name cannot pass for two lines or move the cursor."""
    return _CONTROL.sub(lambda m: repr(m.group(0))[1:-1], str(name))


def flag(*names: str, **settings: Any) -> Any:
    """A yes/no option, shown without a value placeholder (Typer would print `<bool>`)."""
    return typer.Option(*names, metavar="", **settings)


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
        flag("--debug", help="Show the full traceback of an error instead of one line."),
    ] = False,
) -> None:
    if debug:
        os.environ[DEBUG_ENV] = "1"


ResultsOption = Annotated[
    Path, typer.Option("--results", "-r", help="Results directory (ledger, raw outputs, log).")
]


BaselineOption = Annotated[
    list[str] | None,
    typer.Option(
        "--baseline",
        help="Baseline engine of its family (repeat per family); "
        "default: each family's oldest version.",
    ),
]
# The longest any number of seconds a user gives may be.
WEEK_SECONDS = 7 * 24 * 3600
CutOption = Annotated[
    int | None,
    typer.Option(
        min=0,
        max=WEEK_SECONDS,
        help="Cut this many seconds from the start of every series instead of "
        "detecting the end of the warm-up (MSER-5).",
    ),
]
IncludeFlaggedOption = Annotated[
    bool,
    flag("--include-flagged", help="Let cells with validity flags count in the key findings."),
]
DifferencesMarginOption = Annotated[str, margin_option("list differences beyond ±PCT.")]
MeasureOption = Annotated[
    str,
    typer.Option(
        "--measure",
        metavar="NAME",
        help="Compare on tps, cpu_us_per_txn (the server's CPU per transaction: another load "
        "on the host moves it far less than TPS), switches_per_txn, or nopm (New-Orders a "
        "minute, for TPC-C-like workloads).",
    ),
]


def measure_of(name: str) -> Measure:
    """The --measure named, or a one-line error naming the choices."""
    from oltplab.base.metrics import measure_named

    try:
        return measure_named(name)
    except ValueError as exc:
        raise OltplabError(f"--measure {exc}") from None


def report_outcome(results: Path, outcome: RunOutcome) -> None:
    ledger = Ledger.open(results, create=False)
    try:
        cells = ledger.cells()
        kinds = ledger.kind_results()
    finally:
        ledger.close()
    for table in throughput_tables(cells, kinds):
        console.print(table)
    console.print(status_table(outcome.counts))
    if outcome.failed:
        console.print(failed_table(outcome.failed))
    console.print(f"Results in {results} (ledger.sqlite, raw outputs, oltplab.log)")
    console.print(f"Next: oltplab report {results}", highlight=False)
    if outcome.interrupted:
        errors.print("interrupted: run the same command again to resume")
        raise typer.Exit(EXIT_INTERRUPTED)
    if outcome.failed:
        raise typer.Exit(EXIT_CELL_FAILED)


AllowMismatchOption = Annotated[
    bool,
    flag(
        "--allow-mismatch",
        help="Give a verdict even between runs whose spec, dataset, engine settings, "
        "isolation, order or host differ (each difference is still named).",
    ),
]


def unlike(results: list[Path], *, refuse: bool, expected: tuple[str, ...] = ()) -> list[str]:
    """What differs between these runs' setups, each said on stderr as a note; where a
    verdict is asked (refuse), any difference is an error naming them all instead. The
    `expected` aspects are left out (shards run on machines of their own, by design)."""
    from oltplab.analysis.comparability import mismatches

    found = [m.describe() for m in mismatches(_traits(results)) if m.aspect not in expected]
    if found and refuse:
        raise OltplabError(
            f"{' and '.join(shown(p) for p in results)} were not measured alike ("
            + "; ".join(found)
            + "): a verdict would be the setup's, not the engine's; measure them alike, or "
            "pass --allow-mismatch to judge anyway"
        )
    for said in found:
        errors.print(f"note: not alike: {said}", highlight=False, markup=False, soft_wrap=True)
    return found


def uncompared(results: list[Path]) -> list[str]:
    """What could not be compared between these runs, as some did not record it (an
    imported tree records no setup), each said on stderr as a note."""
    from oltplab.analysis.comparability import unrecorded

    found = unrecorded(_traits(results))
    for said in found:
        errors.print(f"note: not compared: {said}", highlight=False, markup=False, soft_wrap=True)
    return found


def _traits(results: list[Path]) -> list[Traits]:
    from oltplab.analysis.comparability import traits_of

    return [traits_of(path, shown(path)) for path in results]


def report_hint(results: list[Path]) -> str:
    """The report that shows these results: each directory once (`gate A A` is one run),
    side by side in a folder of its own when there are several."""
    unique = list({path.resolve(): path for path in results}.values())
    named = " ".join(shown(path) for path in unique)
    if len(unique) == 1:
        return f"oltplab report {named}"
    return f"oltplab report {named} -o DIR (the {len(unique)} side by side)"


def run_and_report(request: RunRequest) -> None:
    """The matrix, or one shard of it between its canaries, or a search, then its tables."""
    from oltplab.experiments.measuring import canary_verdict, floor_note, undecided_note

    display = display_for(console)
    if (note := floor_note(request)) is not None:
        say(note, errors)
    if request.shard is not None:
        from oltplab.distribute.shard_canary import run_shard

        outcome = run_shard(request, display)
    elif request.spec.protocol.target_ci_pct is not None:
        from oltplab.cli.display import answers_table
        from oltplab.experiments.until_answered import measure_until_answered

        search = measure_until_answered(request, display)
        outcome = search.outcome
        if search.answers:
            console.print(answers_table(search.answers, search.rounds, search.stopped))
            for answer in search.answers:
                console.print(answer.describe(), highlight=False, soft_wrap=True)
    else:
        from oltplab.measure.runner import run as run_matrix

        outcome = run_matrix(request, display)
    plain = request.shard is None and request.spec.protocol.target_ci_pct is None
    ended = not outcome.interrupted
    if plain and ended and (note := undecided_note(request)):
        say(note, errors)
    if request.spec.protocol.canary and ended and (canary := canary_verdict(request.results)):
        say(canary.describe(), errors if canary.unfit else console)
    report_outcome(request.results, outcome)


def folder_option(path: Path | None, option: str) -> Path | None:
    """An option naming a folder to use or create, checked before anything is written:
    a file standing there is bad input, not a failure halfway through the run."""
    if path is None:
        return None
    for place in (path, *path.parents):
        if place.exists():
            if not place.is_dir():
                raise OltplabError(f"{option} {path}: {place} is a file; give a folder")
            break
    return path.resolve()


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str, option: str) -> float:
    """`90s`, `30m`, `2h`, `1d` (a bare number is minutes) in seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    seconds = float(match.group(1)) * _UNITS[match.group(2) or "m"] if match else 0.0
    if not 0 < seconds <= 7 * 86400:
        raise OltplabError(
            f"{option} {text}: expected a time such as 90s, 30m or 2h (at most 7 days)"
        )
    return seconds
