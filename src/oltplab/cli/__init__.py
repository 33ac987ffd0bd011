"""The `oltplab` command line: one module per group of commands, registered here."""

from __future__ import annotations

import logging
import os
import sqlite3
import sys
from collections.abc import Callable

from oltplab.base.errors import EXIT_ENVIRONMENT, EXIT_INTERNAL, EXIT_INTERRUPTED, OltplabError
from oltplab.cli import engines, results, runs, shards, versions
from oltplab.cli.app import DEBUG_ENV, Command, app, engines_app, errors, submit_app
from oltplab.store.files import os_problem

# In the order `--help` lists them; a name only where the function's differs.
COMMANDS: tuple[tuple[str | None, Callable[..., None]], ...] = (
    (None, runs.run), (None, runs.rerun), (None, runs.reproduced), (None, runs.demo),
    (None, results.status), (None, results.export), ("import", results.import_),
    (None, results.report), (None, results.rebuild), (None, runs.calibrate),
    (None, shards.plan), (None, shards.merge), (None, shards.cancel),
    (None, versions.history), (None, versions.bisect), (None, versions.capacity),
)  # fmt: skip
for name, command in COMMANDS:
    app.command(name, cls=Command)(command)
engines_app.command("list", cls=Command)(engines.engines_list)
engines_app.command("fetch", cls=Command)(engines.engines_fetch)
submit_app.command("slurm", cls=Command)(shards.submit_slurm)
submit_app.command("k8s", cls=Command)(shards.submit_k8s)

__all__ = ["app", "main"]


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
