"""One name and one unit for an idea, whichever command takes it.

The *margin* is the smallest difference that matters: a percentage such as `3%` (or `3`),
given as `--margin` wherever a verdict is judged against it (gate, report, export, run's
and plan's precision search, rerun, reproduced, bisect, replay). The *resolution* is how
finely a search refines its own estimate (replay's stopping rule, capacity's bracket). The
names that commands used before are still accepted, each with a one-line note.
"""

from __future__ import annotations

from collections.abc import Callable

from oltplab.base.asking import MARGIN, RESOLUTION

# command -> an option's old name -> its name now
RENAMED: dict[str, dict[str, str]] = {
    "run": {"--precision": MARGIN},
    "plan": {"--precision": MARGIN},
    "gate": {"--max-regression": MARGIN},
    "report": {"--threshold": MARGIN},
    "export": {"--threshold": MARGIN},
    "bisect": {"--threshold": MARGIN},
    "replay": {"--threshold": MARGIN, "--target": RESOLUTION},
    "capacity": {"--precision": RESOLUTION},
}


def _command(arguments: list[str]) -> str | None:
    """The command word: the first argument that is not the global --debug."""
    return next((a for a in arguments if a != "--debug"), None)


def renamed(arguments: list[str], note: Callable[[str], None]) -> list[str]:
    """The arguments with each option's old name replaced by its name now (`--old VALUE` and
    `--old=VALUE` alike), a note said once for each old name used."""
    table = RENAMED.get(_command(arguments) or "", {})
    said: set[str] = set()
    now = []
    for argument in arguments:
        old, equals, value = argument.partition("=")
        if old in table:
            if old not in said:
                note(f"note: {old} is now {table[old]} (the same value); the old name still works")
                said.add(old)
            argument = table[old] + equals + value
        now.append(argument)
    return now
