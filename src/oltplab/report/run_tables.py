"""The tables said when a run ends, or when its state is asked for: its throughput as its
workloads' users read it, its cells' counts and the failed ones with their reasons."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from statistics import mean
from typing import TYPE_CHECKING

from oltplab.base.errors import EXIT_CELL_FAILED, EXIT_INTERRUPTED
from oltplab.base.telling import Note, Rows, Said, Told
from oltplab.base.wording import counted
from oltplab.store.ledger import Ledger
from oltplab.store.rows import CellRow
from oltplab.store.status import Status

if TYPE_CHECKING:  # the runner loads the engines' drivers, which reports never need
    from oltplab.measure.runner import RunOutcome
    from oltplab.sysbench.transactions import KindResults

# The status columns of a table of counts, in the order they are read.
STATUS_COLUMNS = (Status.DONE, Status.FAILED, Status.PENDING, Status.RUNNING)
FLAGGED_MARK = "*"


def outcome_told(results: Path, outcome: RunOutcome) -> Told:
    """A run's end: its throughput, its cells' counts, the failed ones, where it all is;
    exits 1 when a cell failed, 130 when interrupted (run the same command to resume)."""
    ledger = Ledger.open(results, create=False)
    try:
        said: list[Said] = [*throughput_rows(ledger.cells(), ledger.kind_results())]
    finally:
        ledger.close()
    said.append(status_rows(outcome.counts))
    if outcome.failed:
        said.append(failed_rows(outcome.failed))
    said.append(f"Results in {results} (ledger.sqlite, raw outputs, oltplab.log)")
    if outcome.interrupted:
        said.append(Note("interrupted: run the same command again to resume"))
    status = EXIT_INTERRUPTED if outcome.interrupted else EXIT_CELL_FAILED if outcome.failed else 0
    return Told(tuple(said), f"oltplab report {results}", status)


def throughput_rows(cells: list[CellRow], kinds: Mapping[str, KindResults]) -> list[Rows]:
    """NOPM and TPM for the TPC-C-like workloads (`kinds`, by cell key), TPS for the
    others."""
    ordering = {cell.workload for cell in cells if cell.key in kinds}
    return [
        *tps_rows([cell for cell in cells if cell.workload not in ordering]),
        *order_rows([cell for cell in cells if cell.workload in ordering], kinds),
    ]


def order_rows(cells: list[CellRow], kinds: Mapping[str, KindResults]) -> list[Rows]:
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
    caption = (
        f"efficiency: NOPM a warehouse against the {SPEC_NOPM_PER_WAREHOUSE} a warehouse can "
        "give with TPC-C's keying and think times; this workload has none"
    )
    tables = []
    for (scenario, tier, workload), points in sorted(groups.items()):
        rows = []
        for (engine, threads), found in points.items():
            figures = order_figures(found)
            rows.append((
                engine,
                str(threads),
                f"{figures.nopm:,.0f}" if figures.nopm is not None else "-",
                f"{figures.tpm:,.0f}" if figures.tpm is not None else "-",
                f"{figures.efficiency_pct:,.0f}%" if figures.efficiency_pct is not None else "-",
                figures.consistency,
            ))  # fmt: skip
        figures_columns = ("threads", "NOPM", "TPM", "efficiency")
        tables.append(
            Rows(
                f"NOPM and TPM, {scenario}, tier {tier}, {workload}",
                ("engine", *figures_columns, "consistency"),
                tuple(rows),
                right=figures_columns,
                caption=caption,
            )
        )
    return tables


def tps_rows(cells: list[CellRow]) -> list[Rows]:
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
        rows, flagged = [], False
        for engine, by_threads in groups[key].items():
            values = [by_threads.get(t) for t in threads]
            flagged |= any(c.flags for v in values if v for c in v)
            rows.append((engine, *(_tps_cell(v) for v in values)))
        columns = tuple(f"{count}t" for count in threads)
        tables.append(
            Rows(
                f"TPS, {scenario}, tier {tier}, {workload}",
                ("engine", *columns),
                tuple(rows),
                right=columns,
                caption=f"{FLAGGED_MARK} flagged: the report says why" if flagged else None,
            )
        )
    return tables


def _tps_cell(measured: list[CellRow] | None) -> str:
    if measured is None:
        return ""
    if not measured:
        return "failed"
    shown = f"{mean(c.tps or 0.0 for c in measured):,.0f}"
    return shown + (FLAGGED_MARK if any(c.flags for c in measured) else "")


def failed_rows(failed: list[CellRow]) -> Rows:
    rows = []
    for row in failed:
        run = f" run {row.repetition}" if row.repetition > 1 else ""
        cell = (
            f"{row.engine} {row.scenario}\n{row.tier} {row.workload} "
            f"{counted(row.threads, 'thread')}{run}"
        )
        rows.append((cell, row.reason or ""))
    return Rows("Failed cells", ("cell", "reason"), tuple(rows), folded=("reason",))


def status_rows(counts: Mapping[str, int]) -> Rows:
    row = (*(str(counts.get(c, 0)) for c in STATUS_COLUMNS), str(sum(counts.values())))
    columns = (*STATUS_COLUMNS, "total")
    return Rows("Cells", columns, (row,), right=columns)
