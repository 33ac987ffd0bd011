"""What a person sees: a progress bar with ETA while running, tables when done."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from oltplab.base.sizes import duration_text
from oltplab.base.telling import Note, Rows, Told, Verbatim

if TYPE_CHECKING:  # the analysis loads SciPy, which most commands never need
    pass


class RichDisplay:
    """The runner's Display: one bar over all planned benchmark seconds."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
        )
        self.task: TaskID | None = None
        self.base = 0.0
        self.seconds = 0.0
        self.label = ""

    def start(self, total_seconds: float) -> None:
        self.progress.start()
        self.task = self.progress.add_task("starting", total=max(total_seconds, 1))

    def phase(self, label: str, seconds: float) -> None:
        assert self.task is not None
        self.base += self.seconds
        self.seconds, self.label = seconds, label
        self.progress.update(self.task, completed=self.base, description=label)

    def advance(self, elapsed: float) -> None:
        assert self.task is not None
        left = max(0, self.seconds - elapsed)
        self.progress.update(
            self.task,
            completed=self.base + min(elapsed, self.seconds),
            description=f"{self.label} [dim]{left:.0f} s left[/dim]",
        )

    def extend(self, seconds: float) -> None:
        """More work than planned (an adaptive round): the bar's total grows."""
        assert self.task is not None
        total = self.progress.tasks[0].total or 0
        self.progress.update(self.task, total=total + seconds)

    def note(self, message: str) -> None:
        self.progress.console.print(message)

    def stop(self) -> None:
        if self.task is not None:
            self.progress.update(self.task, completed=self.base + self.seconds, description="done")
        self.progress.stop()


class PlainDisplay:
    """The runner's Display where output goes to a file (nohup, a scheduler's log): a line
    per phase and one a minute within a long one, each with the share done and the ETA,
    never a bar or spinner redrawn into the file."""

    EVERY_SECONDS = 60.0

    def __init__(self, console: Console) -> None:
        self.console = console
        self.total = 1.0
        self.base = 0.0
        self.seconds = 0.0
        self.label = ""
        self.started = time.monotonic()
        self.said_at = 0.0

    def start(self, total_seconds: float) -> None:
        self.total = max(total_seconds, 1.0)
        self.started = time.monotonic()

    def phase(self, label: str, seconds: float) -> None:
        self.base += self.seconds
        self.seconds, self.label = seconds, label
        self._say(self.base, label)

    def advance(self, elapsed: float) -> None:
        if time.monotonic() - self.said_at >= self.EVERY_SECONDS:
            left = max(0.0, self.seconds - elapsed)
            self._say(self.base + min(elapsed, self.seconds), f"{self.label}, {left:.0f} s left")

    def extend(self, seconds: float) -> None:
        self.total += seconds

    def note(self, message: str) -> None:
        # The runner's notes carry Rich markup for the terminal; a log gets their text.
        self.console.print(Text.from_markup(message).plain, highlight=False, soft_wrap=True)

    def stop(self) -> None:
        self._say(self.base + self.seconds, "done")

    def _say(self, done: float, what: str) -> None:
        self.said_at = time.monotonic()
        share = min(done / self.total, 1.0)
        spent = self.said_at - self.started
        eta = f", ETA {duration_text(spent * (1 - share) / share)}" if 0.01 < share < 1 else ""
        self.console.print(
            f"{time.strftime('%H:%M:%S')} {share:4.0%} {what}{eta}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


def display_for(console: Console) -> RichDisplay | PlainDisplay:
    """A live bar on a terminal; plain lines anywhere else."""
    return RichDisplay(console) if console.is_terminal else PlainDisplay(console)


def rows_table(rows: Rows) -> Table:
    """A table as Rich draws it: its title never wrapped, a line between rows when a cell
    holds several."""
    several = any("\n" in value for row in rows.rows for value in row)
    table = Table(
        title=rows.title, caption=rows.caption, min_width=len(rows.title) + 4, show_lines=several
    )
    for column in rows.columns:
        right, folded = column in rows.right, column in rows.folded
        table.add_column(
            column,
            justify="right" if right else "left",
            overflow="fold" if folded else "ellipsis",
            no_wrap=column in rows.whole,
        )
    for number, row in enumerate(rows.rows, start=1):
        table.add_row(*row, style="bold" if rows.last_bold and number == len(rows.rows) else None)
    return table


def show(told: Told, console: Console, errors: Console) -> None:
    """What a command tells, drawn: each line as it is (no markup read into a file name),
    each table with Rich; then the next step, and the exit status."""
    for said in told.said:
        if isinstance(said, Rows):
            console.print(rows_table(said))
        elif isinstance(said, Verbatim):
            sys.stdout.write(said.text)
        elif isinstance(said, Note):
            errors.print(said.text, highlight=False, markup=False, soft_wrap=True)
        else:
            console.print(said, highlight=False, markup=False, soft_wrap=True)
    if told.next_step is not None:
        console.print(f"Next: {told.next_step}", highlight=False, markup=False, soft_wrap=True)
    if told.exit_status:
        raise typer.Exit(told.exit_status)
