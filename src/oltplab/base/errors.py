"""Errors that reach the user as one line, without a traceback, and the exit code each gives.

Exit codes, the same for every command: 0 done, 1 a cell failed or a regression was found,
2 bad input (a spec, an argument, a file given to read), 3 the environment (disk full,
permissions, a damaged ledger, a results directory in use), 4 a bug in oltplab, 5 undecided
(a verdict was asked, by `gate`, `reproduced` or `bisect`, and the intervals cannot give one
yet), 130 interrupted.
"""

EXIT_CELL_FAILED = 1
EXIT_REGRESSED = 1
EXIT_BAD_INPUT = 2
EXIT_ENVIRONMENT = 3
EXIT_INTERNAL = 4
EXIT_UNDECIDED = 5
EXIT_INTERRUPTED = 130


class OltplabError(Exception):
    """A problem the user can fix; the message names what is wrong and how to fix it."""

    exit_code = EXIT_BAD_INPUT


class SpecError(OltplabError):
    """The spec file is malformed or asks for something impossible."""


class EngineError(OltplabError):
    """An engine could not be fetched, initialised, started or checked."""


class EnvironmentProblem(OltplabError):
    """The machine, not the input, stops the command: disk, permissions, storage, a lock."""

    exit_code = EXIT_ENVIRONMENT


class DiskFull(EnvironmentProblem):
    """No space left where oltplab writes; the run stops so that it can resume."""


class LedgerDamaged(EnvironmentProblem):
    """The ledger file cannot be trusted: damaged pages, truncation, values of wrong types."""


class ResultsBusy(EnvironmentProblem):
    """Another oltplab process is writing to the results directory."""
