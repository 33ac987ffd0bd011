"""The `oltplab` command line: one module per group of commands, registered here."""

from __future__ import annotations

import logging
import os
import sqlite3
import sys
from collections.abc import Callable

import typer

# Typer's own copy of Click: the errors its argument parsing raises.
from typer._click.core import Context
from typer._click.exceptions import NoArgsIsHelpError, UsageError

from oltplab.base.errors import (
    EXIT_BAD_INPUT,
    EXIT_ENVIRONMENT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    OltplabError,
)
from oltplab.cli import results, runs, shards, versions
from oltplab.cli.app import DEBUG_ENV, Command, app, engines_app, errors
from oltplab.cli.plugins import load_plugins
from oltplab.cli.submit import submit_app
from oltplab.cli.vocabulary import renamed
from oltplab.store.files import os_problem

# In the order `--help` lists them; a name only where the function's differs.
COMMANDS: tuple[tuple[str | None, Callable[..., None]], ...] = (
    (None, runs.run), (None, runs.rerun), (None, runs.reproduced), (None, runs.demo),
    (None, results.status), (None, results.export), ("import", results.import_),
    (None, results.report), (None, results.rebuild), (None, results.clean),
    (None, results.replay),
    (None, runs.calibrate), (None, runs.calibrations),
    (None, shards.plan), (None, shards.merge), (None, shards.cancel),
    (None, versions.history), (None, versions.bisect), (None, versions.capacity),
    (None, versions.gate), (None, versions.site),
)  # fmt: skip
for name, command in COMMANDS:
    app.command(name, cls=Command)(command)
engines_app.command("list", cls=Command)(runs.engines_list)
engines_app.command("fetch", cls=Command)(runs.engines_fetch)
engines_app.command("serve", cls=Command)(runs.engines_serve)
# One `submit <name>` per registered scheduler (oltplab.cli.submit), plugins' included.
app.add_typer(submit_app, name="submit")

__all__ = ["app", "main"]


def _fail(message: str, code: int) -> None:
    one_line = " | ".join(part.strip() for part in message.splitlines() if part.strip())
    errors.print(f"error: {one_line}", highlight=False, markup=False, soft_wrap=True)
    sys.exit(code)


def _blank_argument(arguments: list[str]) -> str | None:
    """What is wrong when an argument is empty: no value oltplab takes means anything empty
    (an empty results folder would be the current one, the whole matrix written into it)."""
    for position, argument in enumerate(arguments):
        if not argument.strip():
            after = f" after `{arguments[position - 1]}`" if position else ""
            return f"an empty argument{after}: give a value (see `oltplab --help`)"
    return None


def _command_named(context: Context | None) -> str:
    """`oltplab plan` however it was started (Click names `python -m oltplab` as such)."""
    names = []
    while context is not None and context.parent is not None:
        names.append(context.info_name or "")
        context = context.parent
    return " ".join(["oltplab", *reversed(names)])


def main() -> None:
    # A log file on a full disk must not print tracebacks of its own.
    logging.raiseExceptions = False
    blank = _blank_argument(sys.argv[1:])
    if blank is not None:
        _fail(blank, EXIT_BAD_INPUT)
    try:
        load_plugins()
        arguments = renamed(
            sys.argv[1:], lambda note: errors.print(note, highlight=False, soft_wrap=True)
        )
        # Not standalone, so that a wrong argument is one line like every other error.
        code = app(args=arguments, standalone_mode=False)
    except NoArgsIsHelpError as asked:
        asked.show()
        sys.exit(asked.exit_code)
    except UsageError as wrong:
        command = _command_named(wrong.ctx)
        said = wrong.format_message().rstrip(".")
        _fail(f"{command}: {said}; see `{command} --help`", EXIT_BAD_INPUT)
    except (KeyboardInterrupt, typer.Abort):
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
    sys.exit(code if isinstance(code, int) else 0)
