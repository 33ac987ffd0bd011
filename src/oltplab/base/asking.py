"""What a command asks for, declared where the command's work is done: each field of a
frozen dataclass carries its help, names and bounds as metadata, and `oltplab.cli.options`
binds the class to the command line. The options several commands take are declared once
here, each with one name and one unit whichever command takes it (`--margin` is always the
smallest difference that matters, `--resolution` how finely a search refines itself)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

MARGIN = "--margin"
RESOLUTION = "--resolution"
# The longest any number of seconds a user gives may be.
WEEK_SECONDS = 7 * 24 * 3600


@dataclass(frozen=True)
class Declared:
    """How one field is given: as an option (its names; none for `--field-name`) or as a
    positional argument (its metavar)."""

    help: str
    names: tuple[str, ...] = ()
    metavar: str | None = None
    min: float | None = None
    max: float | None = None
    argument: bool = False
    show_default: bool = True


def declared(field: dataclasses.Field[Any]) -> Declared | None:
    return field.metadata.get(Declared)


def option(
    default: Any,
    help: str,
    *names: str,
    metavar: str | None = None,
    min: float | None = None,
    max: float | None = None,
) -> Any:
    """An option with its default (dataclasses.MISSING: none, it must be given); a yes/no
    one is the flag `--field-name` unless it names another, or a pair (`--x/--no-x`)."""
    return dataclasses.field(
        default=default, metadata={Declared: Declared(help, names, metavar, min, max)}
    )


def required(help: str, *names: str, metavar: str | None = None) -> Any:
    """An option the command cannot run without."""
    return dataclasses.field(metadata={Declared: Declared(help, names, metavar)})


def argument(help: str, metavar: str, default: Any = dataclasses.MISSING) -> Any:
    """A positional argument; a list of them when the field is a list."""
    said = Declared(
        help, metavar=metavar, argument=True, show_default=default is dataclasses.MISSING
    )
    return dataclasses.field(default=default, metadata={Declared: said})


def spec_argument() -> Any:
    return argument("The spec file (TOML).", "SPEC")


def results_option(
    help: str = "Results directory (ledger, raw outputs, log).", default: Any = dataclasses.MISSING
) -> Any:
    if default is dataclasses.MISSING:
        return required(help, "--results", "-r")
    return option(default, help, "--results", "-r")


def output_option(help: str, default: Any = None) -> Any:
    if default is dataclasses.MISSING:
        return required(help, "--output", "-o")
    return option(default, help, "--output", "-o")


def margin_option(what: str, default: str | None = None) -> Any:
    """`--margin PCT`, with what it decides in this command."""
    return option(default, f"The margin, e.g. 3% (or 3): {what}", MARGIN, metavar="PCT")


def resolution_option(what: str, default: str | None = None) -> Any:
    """`--resolution PCT`, with what it refines in this command."""
    return option(default, f"The resolution, e.g. 2% (or 2): {what}", RESOLUTION, metavar="PCT")


def measure_option() -> Any:
    return option(
        "tps",
        "Compare on tps, cpu_us_per_txn (the server's CPU per transaction: another load on "
        "the host moves it far less than TPS), switches_per_txn, or nopm (New-Orders a "
        "minute, for TPC-C-like workloads).",
        "--measure",
        metavar="NAME",
    )


def allow_mismatch_option() -> Any:
    return option(
        False,
        "Give a verdict even between runs whose spec, dataset, engine settings, isolation, "
        "order or host differ (each difference is still named).",
        "--allow-mismatch",
    )


def baseline_option() -> Any:
    return option(
        None,
        "Baseline engine of its family (repeat per family); default: each family's oldest version.",
        "--baseline",
    )


def cut_option() -> Any:
    return option(
        None,
        "Cut this many seconds from the start of every series instead of detecting the end "
        "of the warm-up (MSER-5).",
        min=0,
        max=WEEK_SECONDS,
    )
