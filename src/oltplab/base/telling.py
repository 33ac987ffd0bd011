"""What a command tells the person who ran it, as data: lines, notes and tables in the
order they are said, the next command to run, and the exit status. The layer that did the
work says it; `oltplab.cli.display` draws it (Rich), so that no command formats output of
its own and a test reads what was said without a terminal."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rows:
    """A table: its title, column names and rows of text; `right` names the columns
    aligned right (counts, figures), `folded` those whose long values fold onto more lines,
    `whole` those never cut nor wrapped (a name to copy into a spec); `last_bold` sets a
    totals row apart; the caption is said under it."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    right: tuple[str, ...] = ()
    folded: tuple[str, ...] = ()
    whole: tuple[str, ...] = ()
    last_bold: bool = False
    caption: str | None = None


@dataclass(frozen=True)
class Note:
    """A line for standard error: a warning, or what is said beside the output proper."""

    text: str


@dataclass(frozen=True)
class Verbatim:
    """Text for standard output as it is, unwrapped and unstyled (an export, a summary a
    CI job appends to its page)."""

    text: str


Said = str | Rows | Note | Verbatim


@dataclass(frozen=True)
class Told:
    said: tuple[Said, ...] = ()
    next_step: str | None = None  # printed last, as `Next: ...`
    exit_status: int = 0
