"""What a person sees: a progress bar with ETA while running, tables when done."""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from statistics import mean
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
from oltplab.base.wording import counted
from oltplab.engines.supplier import source_of
from oltplab.spec import Spec
from oltplab.spec.server_options import extra_option_lines
from oltplab.store.rows import CellRow
from oltplab.store.status import Status

if TYPE_CHECKING:  # the analysis loads SciPy, which most commands never need
    from oltplab.analysis.estimate import Comparison
    from oltplab.analysis.precision import Answer
    from oltplab.analysis.reproduce import Reproduction
    from oltplab.sysbench.transactions import KindResults


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


# The status columns of a table of counts, in the order they are read.
STATUS_COLUMNS = (Status.DONE, Status.FAILED, Status.PENDING, Status.RUNNING)


def display_for(console: Console) -> RichDisplay | PlainDisplay:
    """A live bar on a terminal; plain lines anywhere else."""
    return RichDisplay(console) if console.is_terminal else PlainDisplay(console)


def throughput_tables(cells: list[CellRow], kinds: Mapping[str, KindResults]) -> list[Table]:
    """The run's throughput as its workloads' users read it: NOPM and TPM for the TPC-C-like
    ones (`kinds`, by cell key), TPS for the others."""
    ordering = {cell.workload for cell in cells if cell.key in kinds}
    return [
        *tps_tables([cell for cell in cells if cell.workload not in ordering]),
        *order_tables([cell for cell in cells if cell.workload in ordering], kinds),
    ]


def order_tables(cells: list[CellRow], kinds: Mapping[str, KindResults]) -> list[Table]:
    """Per scenario, tier and workload: NOPM (tpmC), TPM (tpmTotal), the efficiency against
    the specification's 12.86 a warehouse and the consistency checks, by engine and thread
    count (means of runs)."""
    from oltplab.analysis.orders import order_figures
    from oltplab.workloads.tpcc import SPEC_NOPM_PER_WAREHOUSE

    groups: dict[tuple[str, str, str], dict[tuple[str, int], list[KindResults]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for cell in cells:
        if cell.status == Status.DONE and cell.key in kinds:
            point = (cell.engine, cell.threads)
            groups[(cell.scenario, cell.tier, cell.workload)][point].append(kinds[cell.key])
    tables = []
    for (scenario, tier, workload), points in sorted(groups.items()):
        title = f"NOPM and TPM, {scenario}, tier {tier}, {workload}"
        table = Table(title=title, min_width=len(title) + 4)
        for column in ("engine", "threads", "NOPM", "TPM", "efficiency"):
            table.add_column(column, justify="left" if column == "engine" else "right")
        table.add_column("consistency")
        for (engine, threads), found in points.items():
            figures = order_figures(found)
            table.add_row(
                engine,
                str(threads),
                f"{figures.nopm:,.0f}" if figures.nopm is not None else "-",
                f"{figures.tpm:,.0f}" if figures.tpm is not None else "-",
                f"{figures.efficiency_pct:,.0f}%" if figures.efficiency_pct is not None else "-",
                figures.consistency,
            )
        table.caption = (
            f"efficiency: NOPM a warehouse against the {SPEC_NOPM_PER_WAREHOUSE} a warehouse "
            "can give with TPC-C's keying and think times; this workload has none"
        )
        tables.append(table)
    return tables


def tps_tables(cells: list[CellRow]) -> list[Table]:
    """TPS by thread count per scenario, tier and workload: engines as rows (mean of runs);
    a mean over a cell with validity flags is marked, and the caption says what the mark is."""
    groups: dict[tuple[str, str, str], dict[str, dict[int, list[CellRow]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    threads_seen: dict[tuple[str, str, str], set[int]] = defaultdict(set)
    for cell in cells:
        key = (cell.scenario, cell.tier, cell.workload)
        threads_seen[key].add(cell.threads)
        if cell.status == Status.DONE and cell.tps is not None:
            groups[key][cell.engine][cell.threads].append(cell)
        elif cell.status == Status.FAILED:
            groups[key][cell.engine].setdefault(cell.threads, [])
    tables = []
    for key in sorted(groups):
        scenario, tier, workload = key
        threads = sorted(threads_seen[key])
        title = f"TPS, {scenario}, tier {tier}, {workload}"
        table = Table(title=title, min_width=len(title) + 4)
        table.add_column("engine")
        for count in threads:
            table.add_column(f"{count}t", justify="right")
        flagged = False
        for engine, by_threads in groups[key].items():
            values = [by_threads.get(t) for t in threads]
            flagged |= any(c.flags for v in values if v for c in v)
            table.add_row(engine, *(_tps_cell(v) for v in values))
        if flagged:
            table.caption = f"{FLAGGED_MARK} flagged: the report says why"
        tables.append(table)
    return tables


FLAGGED_MARK = "*"


def _tps_cell(measured: list[CellRow] | None) -> str:
    if measured is None:
        return ""
    if not measured:
        return "[red]failed[/red]"
    shown = f"{mean(c.tps or 0.0 for c in measured):,.0f}"
    return shown + (f"[yellow]{FLAGGED_MARK}[/yellow]" if any(c.flags for c in measured) else "")


def failed_table(failed: list[CellRow]) -> Table:
    table = Table(title="Failed cells", title_style="bold red", show_lines=True)
    table.add_column("cell", no_wrap=True)
    table.add_column("reason", overflow="fold", ratio=1)
    for row in failed:
        run = f" run {row.repetition}" if row.repetition > 1 else ""
        cell = (
            f"{row.engine} {row.scenario}\n{row.tier} {row.workload} "
            f"{counted(row.threads, 'thread')}{run}"
        )
        table.add_row(cell, row.reason or "")
    return table


def status_table(counts: dict[str, int]) -> Table:
    table = Table(title="Cells")
    for column in (*STATUS_COLUMNS, "total"):
        table.add_column(column, justify="right")
    table.add_row(
        *(str(counts.get(c, 0)) for c in STATUS_COLUMNS),
        str(sum(counts.values())),
    )
    return table


def reproduction_table(found: Reproduction) -> Table:
    """Each point of a repeat against its original, within the margin."""
    table = Table(title=f"Repeat against original, within ±{found.margin_pct:g}%")
    for column in ("scenario", "tier", "engine", "threads", "verdict"):
        table.add_column(column, overflow="fold")
    for (scenario, tier, engine, threads), judged in found.points:
        table.add_row(scenario, tier, engine, str(threads), judged.describe("reproduced"))
    return table


def touches(spec: Spec, results: Path) -> list[str]:
    """What running a spec touches beyond this machine's own engines: binaries fetched or
    taken from paths, hosts reached over SSH, endpoints connected to, Lua scripts run (they
    may do anything sysbench's LuaJIT can), raw server options, and where the results go."""
    lines = []
    for engine in spec.engines:
        source = source_of(engine)
        kind, value = next(iter(source.items()))
        lines.append(f"engine {engine.name}: {kind} {value}")
    for host in spec.hosts:
        options = " ".join(f"-o {k}={v}" for k, v in host.options.items())
        port = f" -p {host.port}" if host.port else ""
        identity = f" -i {host.identity_file}" if host.identity_file else ""
        lines.append(
            f"host {host.name}: ssh{port}{identity} {options} {host.ssh}, "
            f"files under {host.workdir}".replace("  ", " ")
        )
    for workload in spec.workloads:
        if workload.script is not None:
            lines.append(f"workload {workload.name}: runs the Lua script {workload.script}")
    lines += [f"server options from {line}" for line in extra_option_lines(spec.model_dump())]
    lines.append(f"results into {results.resolve()}")
    return lines


def noise_table(engine: str, comparisons: Mapping[tuple[str, int], Comparison]) -> Table:
    """A calibration's no-change comparisons: engine A against itself as B."""
    table = Table(title=f"No-change comparison: {engine}-a vs {engine}-b")
    for column in ("scenario", "threads", "difference", "95% interval", "verdict", "method"):
        table.add_column(column)
    for (scenario, count), found in comparisons.items():
        table.add_row(
            scenario,
            str(count),
            f"{found.diff_pct:+.1f}%",
            found.interval(),
            found.verdict,
            found.method,
        )
    return table


def answers_table(found: list[Answer], rounds: int, stopped: str) -> Table:
    """Each comparison's verdict, its 90% interval and the smallest difference it could
    have told apart."""
    measure = found[0].measure.label if found else ""
    table = Table(title=f"Comparisons on {measure} after {rounds} rounds: {stopped}")
    for column in ("comparison", "difference [90% interval]", "verdict", "could detect"):
        table.add_column(column, justify="left" if column == "comparison" else "right")
    colours = {"DIFFERENT": "red", "SAME": "green", "UNKNOWN": "yellow"}
    for answer in found:
        c = answer.comparison
        shown = f"{c.diff_pct:+.1f}% {c.interval()}" if c else "-"
        detectable = answer.detectable_pct
        table.add_row(
            answer.label,
            shown,
            f"[{colours[answer.verdict]}]{answer.verdict}[/]",
            "-" if detectable is None else f"±{detectable:.1f}%",
        )
    return table


def rows_table(rows: Rows) -> Table:
    table = Table(title=rows.title)
    for column in rows.columns:
        right, folded = column in rows.right, column in rows.folded
        table.add_column(
            column, justify="right" if right else "left", overflow="fold" if folded else "ellipsis"
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
