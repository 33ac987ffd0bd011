"""The report's section on workloads with transaction types (the TPC-C-like kind): NOPM
counted both ways, TPM, efficiency and consistency per point and tier, and per transaction
type its share of the mix, service times (avg, percentiles, max), rollbacks, retries and
give-ups."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from oltplab.analysis.dataset import CellRecord
from oltplab.analysis.latency import SERVICE_PERCENTILES, service_times
from oltplab.analysis.model import Analysis
from oltplab.analysis.orders import order_figures
from oltplab.report.format import number, table
from oltplab.sysbench.transactions import KindResults, TransactionType, merged
from oltplab.workloads.tpcc import SPEC_NOPM_PER_WAREHOUSE

Point = tuple[str, str, int]  # engine, workload, threads


def _measured(analysis: Analysis) -> list[CellRecord]:
    return [
        cell
        for cell in analysis.dataset.cells
        if cell.kind_results is not None and cell.status == "done"
    ]


def section(analysis: Analysis, charts: list[Path]) -> list[str]:
    cells = _measured(analysis)
    if not cells:
        return []
    return [
        "## 20. Transactions: NOPM, TPM and the mix",
        "",
        "NOPM is New-Orders committed a minute (go-tpc's tpmC), counted by the driver and "
        "again from how far the districts' next order ids moved over the cell (they differ "
        "only if a count is wrong); TPM counts the committed transactions of every type "
        "(go-tpc's tpmTotal). Means over repetitions; per warehouse, the workload's active "
        f"warehouses. Efficiency is NOPM a warehouse against {SPEC_NOPM_PER_WAREHOUSE}, the "
        "most a warehouse can give with the specification's keying and think times: this "
        "workload has neither, so a figure far above 100% says how far the run is from a "
        "TPC-C setting. It is not tpmC: no waits, no audit. Consistency: the conditions "
        "checked on the data after each cell.",
        "",
        *_nopm(cells),
        "",
        "Per transaction type, over the point's tiers and repetitions: its share of the "
        "transactions that ended, service time (first try to commit, retries included: avg, "
        "percentiles and max, from sysbench's histogram buckets, each within 1%), the "
        "rollbacks the workload asks for (1% of New-Orders), retries after a deadlock or "
        "serialization failure, and give-ups.",
        "",
        *_types(cells),
    ]


def _nopm(cells: list[CellRecord]) -> list[str]:
    by_point: dict[tuple[str, str, int, str], list[KindResults]] = defaultdict(list)
    for cell in cells:
        assert cell.kind_results is not None
        by_point[(cell.engine, cell.workload, cell.threads, cell.tier)].append(cell.kind_results)
    rows = []
    for (engine, workload, threads, tier), found in sorted(by_point.items()):
        figures = order_figures(found)
        per = figures.nopm / figures.warehouses if figures.nopm and figures.warehouses else None
        gap = figures.districts_gap_pct
        rows.append(
            [
                engine, workload, str(threads), tier, number(figures.warehouses),
                number(figures.nopm), number(figures.tpm), number(per),
                f"{figures.efficiency_pct:,.1f}%" if figures.efficiency_pct is not None else "-",
                f"{gap:.2f}%" if gap is not None else "-", figures.consistency,
            ]
        )  # fmt: skip
    headers = [
        "engine", "workload", "threads", "tier", "warehouses", "NOPM", "TPM",
        "NOPM per warehouse", "efficiency", "districts differ by", "consistency",
    ]  # fmt: skip
    return table(headers, rows)


def _types(cells: list[CellRecord]) -> list[str]:
    by_point: dict[Point, list[TransactionType]] = defaultdict(list)
    for cell in cells:
        assert cell.kind_results is not None
        by_point[(cell.engine, cell.workload, cell.threads)] += cell.kind_results.transactions
    rows = []
    for (engine, workload, threads), parts in sorted(by_point.items()):
        types = merged(parts)
        ended = sum(t.ended for t in types)
        for kind in types:
            times = service_times(kind.histogram)
            shown = (
                [number(times.avg), *map(number, times.percentiles), number(times.max)]
                if times
                else ["-"] * (len(SERVICE_PERCENTILES) + 2)
            )
            rows.append(
                [
                    engine, workload, str(threads), kind.name,
                    f"{100 * kind.ended / ended:.2f}%" if ended else "-", *shown,
                    f"{kind.rollbacks:,}", f"{kind.retries:,}", f"{kind.gave_up:,}",
                ]
            )  # fmt: skip
    headers = [
        "engine", "workload", "threads", "type", "share", "avg ms",
        *(f"p{q} ms" for q in SERVICE_PERCENTILES), "max ms", "rollbacks", "retries", "gave up",
    ]  # fmt: skip
    return table(headers, rows)
