"""The report's section on workloads with transaction types (the TPC-C-like kind): NOPM
counted both ways, per warehouse against the buffer-pool tier, and per transaction type its
share of the mix, service-time percentiles, rollbacks, retries and give-ups."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from oltplab.analysis.dataset import CellRecord
from oltplab.analysis.latency import SERVICE_PERCENTILES, service_ms
from oltplab.analysis.model import Analysis
from oltplab.base.metrics import NOPM, NOPM_DISTRICTS, WAREHOUSES_ACTIVE
from oltplab.report.format import number, table
from oltplab.sysbench.transactions import TransactionType, merged

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
        "## 20. Transactions: NOPM and the mix",
        "",
        "NOPM is New-Orders committed a minute, counted by the driver and again from how far "
        "the districts' next order ids moved over the cell (they differ only if a count is "
        "wrong). It is not tpmC: no keying or think times, no audit. Means over repetitions; "
        "per warehouse, the workload's active warehouses.",
        "",
        *_nopm(analysis, cells),
        "",
        "Per transaction type, over the point's tiers and repetitions: its share of the "
        "transactions that ended, service time (first try to commit, retries included) at "
        "the 50th, 95th and 99th percentiles, the rollbacks the workload asks for (1% of "
        "New-Orders), retries after a deadlock or serialization failure, and give-ups.",
        "",
        *_types(cells),
    ]


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _nopm(analysis: Analysis, cells: list[CellRecord]) -> list[str]:
    tiers = list(dict.fromkeys(cell.tier for cell in cells))
    by_point: dict[Point, list[CellRecord]] = defaultdict(list)
    for cell in cells:
        by_point[(cell.engine, cell.workload, cell.threads)].append(cell)
    rows = []
    for (engine, workload, threads), found in sorted(by_point.items()):
        warehouses = _mean([v for c in found if (v := c.metric(WAREHOUSES_ACTIVE)) is not None])
        row = [engine, workload, str(threads), number(warehouses)]
        for tier in tiers:
            nopm = _mean([v for c in found if c.tier == tier and (v := c.metric(NOPM))])
            per = nopm / warehouses if nopm is not None and warehouses else None
            row.append(f"{number(nopm)} ({number(per)})" if nopm is not None else "-")
        gaps = [
            abs(districts / nopm - 1)
            for c in found
            if (nopm := c.metric(NOPM)) and (districts := c.metric(NOPM_DISTRICTS)) is not None
        ]
        row.append(f"{100 * max(gaps):.2f}%" if gaps else "-")
        rows.append(row)
    headers = [
        "engine", "workload", "threads", "warehouses",
        *[f"NOPM {tier} (per warehouse)" for tier in tiers], "districts differ by",
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
            rows.append(
                [
                    engine, workload, str(threads), kind.name,
                    f"{100 * kind.ended / ended:.2f}%" if ended else "-",
                    *[number(ms) for ms in service_ms(kind.histogram, SERVICE_PERCENTILES)],
                    f"{kind.rollbacks:,}", f"{kind.retries:,}", f"{kind.gave_up:,}",
                ]
            )  # fmt: skip
    headers = [
        "engine", "workload", "threads", "type", "share",
        *(f"p{q} ms" for q in SERVICE_PERCENTILES), "rollbacks", "retries", "gave up",
    ]  # fmt: skip
    return table(headers, rows)
