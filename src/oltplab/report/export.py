"""Flat exports: the measured cells and the report's tables, as CSV or JSON, read from the
analysis (computed once, as the report is).

A figure with an interval (`tps`, `diff_pct`) is the steady estimate, the interval's
bounds beside it (`tps_ci_low`, `ci_low_pct`, ...) made from the same seconds; what sysbench
printed for the whole run has its own columns (`tps_whole_run`, `whole_run_diff_pct`).
"""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

from oltplab.analysis.changes import Change
from oltplab.analysis.dataset import CellRecord
from oltplab.analysis.equivalence import TOST_CONFIDENCE
from oltplab.analysis.estimate import Estimate, mean_estimate
from oltplab.analysis.latency import PERCENTILES, SERVICE_PERCENTILES, service_times
from oltplab.analysis.model import Analysis
from oltplab.analysis.openloop import cell_percentiles
from oltplab.analysis.precision import Answer
from oltplab.analysis.tables import ProgressionRow
from oltplab.base.metrics import (
    CONSISTENCY_CHECKED,
    CONSISTENCY_FAILED,
    CPU_PER_TXN,
    KIND_METRICS,
    NOPM,
    WAREHOUSES_ACTIVE,
    latency_metric,
)
from oltplab.sysbench.validity import SATURATED
from oltplab.workloads.tpcc import efficiency_pct

# fmt: off
IDENTITY_COLUMNS = (
    "scenario", "family", "version", "engine", "tier", "workload", "threads", "repetition",
    "status",
)
PERCENTILE_LABELS = [f"p{q:g}" for q in PERCENTILES]
# From each cell's whole latency histogram (sysbench --histogram).
DISTRIBUTION_COLUMNS = ("p50_ms", "p90_ms", "p95_ms", "p99_ms", "p99_9_ms", "max_ms")
OPEN_LOOP_COLUMNS = ("offered_tps", "achieved_tps", "saturated")
# The cell's server CPU per transaction over its steady seconds, with its interval.
CPU_COLUMNS = ("cpu_us_per_txn", "cpu_us_per_txn_ci_low", "cpu_us_per_txn_ci_high")
RATE_COLUMNS = ("qps", "reads_per_s", "writes_per_s", "other_per_s", "lat_avg_ms")
COUNT_COLUMNS = (
    "lat_max_ms", "errors_per_s", "error_rate", "reconnects_per_s", "duration_s", "interval_s",
)
PROGRESSION_COLUMNS = (
    "scenario", "tier", "family", "baseline_version", "version", "threads", "tps",
    "baseline_tps", "diff_pct", "ci_low_pct", "ci_high_pct", "verdict", "n", "method",
    "tps_whole_run", "baseline_tps_whole_run", "whole_run_diff_pct", "machines",
)
FINDING_COLUMNS = ("kind", "scenario", "tier", "engine", "value", "detail")
OPERATION_COLUMNS = (
    "scenario", "tier", "workload", "engine", "threads", "runs", "tps", "cpu_us_per_txn",
    "context_switches_per_txn", "kb_read_per_txn", "kb_written_per_txn", "redo_bytes_per_txn",
)
FLAG_COLUMNS = (
    "scenario", "engine", "tier", "workload", "threads", "repetition", "status", "flags",
    "error_rate", "ignored_errors", "reason", "notes",
)



def summary_columns(percentiles: list[int]) -> tuple[str, ...]:
    """One row per cell: the steady TPS with its interval, then what sysbench printed for
    the whole run, latency under each percentile the runs used (`lat_p99_ms`)."""
    latency = tuple(latency_metric(p) for p in percentiles)
    return (
        *IDENTITY_COLUMNS, "tps", "tps_ci_low", "tps_ci_high", "tps_whole_run",
        *RATE_COLUMNS, *latency, *COUNT_COLUMNS, "ignored_errors", *DISTRIBUTION_COLUMNS,
        *OPEN_LOOP_COLUMNS, *CPU_COLUMNS,
        "flags", "cv", "steady_from_s", "notes", "machine",
    )  # fmt: skip


CHANGE_COLUMNS = (
    "series", "scenario", "tier", "threads", "last_good", "first_changed", "change_pct",
    "pvalue", "diff_pct", "ci_low_pct", "ci_high_pct", "verdict",
)
PRECISION_COLUMNS = (
    "comparison", "a", "b", "measure", "diff_pct", "ci_low_pct", "ci_high_pct", "confidence",
    "verdict", "rounds", "margin_pct", "detectable_pct",
)
COST_COLUMNS = (
    "measure", "family", "scenario", "tier", "threads", "baseline", "engine", "baseline_cost",
    "cost", "diff_pct", "ci_low_pct", "ci_high_pct", "verdict",
)
# A workload kind's own figures (the TPC-C-like kind's), one row per cell and transaction
# type, the cell's NOPM repeated on each.
SERVICE_COLUMNS = (
    "service_avg_ms", *(f"service_p{q}_ms" for q in SERVICE_PERCENTILES), "service_max_ms"
)
TRANSACTION_COLUMNS = (
    *IDENTITY_COLUMNS, "type", "committed", "rollbacks", "retries", "gave_up",
    "transaction_errors", "share_pct", *SERVICE_COLUMNS, *KIND_METRICS, "efficiency_pct",
)
# Every table but the summary, whose latency columns are those the runs used.
FIXED_COLUMNS = {
    "progression": PROGRESSION_COLUMNS, "differences": PROGRESSION_COLUMNS,
    "findings": FINDING_COLUMNS, "flags": FLAG_COLUMNS, "operations": OPERATION_COLUMNS,
    "changes": CHANGE_COLUMNS, "precision": PRECISION_COLUMNS, "costs": COST_COLUMNS,
    "transactions": TRANSACTION_COLUMNS,
}
TABLES = ("summary", *FIXED_COLUMNS)
# fmt: on


def columns_of(table: str, percentiles: list[int]) -> tuple[str, ...]:
    """The columns a table is written with, in order."""
    if table == "summary":
        return summary_columns(percentiles)
    if table not in FIXED_COLUMNS:
        raise ValueError(f"unknown table {table!r}")
    return FIXED_COLUMNS[table]


def _round(value: float | None, digits: int) -> float | None:
    if value is None or math.isnan(value):
        return None
    return round(value, digits)


def _bounds(estimate: Estimate | None, digits: int) -> tuple[float | None, ...]:
    """Point, low, high, rounded alike (rounding keeps the point inside its interval)."""
    if estimate is None:
        return None, None, None
    return (
        _round(estimate.point, digits),
        _round(estimate.low, digits),
        _round(estimate.high, digits),
    )


def salvaged_rows(found: list[dict[str, Any]]) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
    """Rows read from a damaged ledger, in the summary table's columns: what sysbench
    printed; the steady figures need the per-second samples and are left empty."""
    percentiles = sorted({v["percentile"] for v in found if v.get("percentile")}) or [95]
    columns = summary_columns(percentiles)
    renamed = {"duration_s": "total_time_s", "tps_whole_run": "tps"}
    steady = {"tps", "tps_ci_low", "tps_ci_high", *CPU_COLUMNS, "cv", "steady_from_s", "error_rate"}
    rows = []
    for values in found:
        row = {c: None if c in steady else values.get(renamed.get(c, c)) for c in columns}
        if values.get("percentile"):
            row[latency_metric(values["percentile"])] = values.get("lat_pct_ms")
        rows.append(row)
    return columns, rows


def _summary(analysis: Analysis) -> list[dict[str, Any]]:
    """One row per measured cell (done or failed), with its steady-state statistics."""
    stats = {s.cell.key: s for s in analysis.stability}
    percentiles = analysis.dataset.percentiles
    cpu = analysis.cost_points.get(CPU_PER_TXN.name)
    rows = []
    for cell in analysis.dataset.cells:
        found = stats.get(cell.key)
        tps, low, high = _bounds(found.mean if found else None, 2)
        # The cell's own steady seconds, weighted by their transactions, as the costs
        # table's points are made of: the estimate and its interval from the same seconds.
        cut = cpu.cuts.get(cell.key) if cpu else None
        cpu_bounds = _bounds(mean_estimate(cut.sample) if cut else None, 3)
        rows.append(
            {
                **{c: getattr(cell, c) for c in IDENTITY_COLUMNS},
                "tps": tps,
                "tps_ci_low": low,
                "tps_ci_high": high,
                "tps_whole_run": cell.tps,
                # Rates sysbench prints to two decimals; reads/writes/other a second are
                # derived from its counts, and rounded alike.
                **{c: _round(getattr(cell, c), 2) for c in RATE_COLUMNS},
                **{latency_metric(p): cell.metric(latency_metric(p)) for p in percentiles},
                **{c: getattr(cell, c) for c in COUNT_COLUMNS},
                "ignored_errors": _codes(cell),
                **_distribution(analysis, cell),
                "offered_tps": cell.rate or None,
                "achieved_tps": cell.tps if cell.rate else None,
                "saturated": (SATURATED in cell.flags) if cell.rate else None,
                **dict(zip(CPU_COLUMNS, cpu_bounds, strict=True)),
                "flags": ",".join(cell.flags),
                "cv": _round(found.jitter, 4) if found and found.jitter is not None else None,
                "steady_from_s": found.steady_from if found else None,
                "notes": cell.notes,
                "machine": cell.machine,
            }
        )
    return rows


def _codes(cell: CellRecord) -> str:
    """`1213=45 1205=2`: the errors sysbench ignored, by code, as the gate printed them."""
    return " ".join(f"{code}={count}" for code, count in cell.ignored_errors)


def _distribution(analysis: Analysis, cell: CellRecord) -> dict[str, float | None]:
    found = cell_percentiles(analysis.dataset, cell)
    names = [*PERCENTILE_LABELS, "max"]
    return {
        column: None if found is None else _round(found[name], 3)
        for column, name in zip(DISTRIBUTION_COLUMNS, names, strict=True)
    }


def _progression(rows: list[Any]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        change = r.change
        diff, low, high = _bounds(change.estimate if change else None, 1)
        out.append(
            {
                "scenario": r.scenario,
                "tier": r.tier,
                "family": r.family,
                "baseline_version": r.baseline_version,
                "version": r.version,
                "threads": r.threads,
                "tps": _bounds(r.value.steady, 2)[0],
                "baseline_tps": _bounds(r.baseline.steady, 2)[0],
                "diff_pct": diff,
                "ci_low_pct": low,
                "ci_high_pct": high,
                "verdict": change.verdict if change else "no per-second data",
                "n": change.n if change else None,
                "method": change.method if change else None,
                "tps_whole_run": round(r.value.whole_run, 2),
                "baseline_tps_whole_run": round(r.baseline.whole_run, 2),
                "whole_run_diff_pct": round(r.whole_run_diff_pct, 1),
                "machines": " vs ".join(change.machines) if change and change.machines else "",
            }
        )
    return out


def table_rows(table: str, analysis: Analysis) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
    """Columns and rows of one table."""
    return columns_of(table, analysis.dataset.percentiles), _rows(table, analysis)


def _rows(table: str, analysis: Analysis) -> list[dict[str, Any]]:
    if table == "summary":
        return _summary(analysis)
    if table in ("progression", "differences"):
        rows = analysis.differences if table == "differences" else analysis.progression
        return _progression(rows)
    if table == "findings":
        return [
            {
                "kind": f.kind,
                "scenario": f.scenario,
                "tier": f.tier,
                "engine": f.engine,
                "value": _round(f.value, 3),
                "detail": f.detail,
            }
            for f in analysis.findings
        ]
    if table == "flags":
        return [
            {
                "scenario": c.scenario,
                "engine": c.engine,
                "tier": c.tier,
                "workload": c.workload,
                "threads": c.threads,
                "repetition": c.repetition,
                "status": c.status,
                "flags": ",".join(c.flags),
                "error_rate": c.error_rate,
                "ignored_errors": _codes(c),
                "reason": c.reason,
                "notes": c.notes,
            }
            for c in analysis.flagged
        ]
    if table == "operations":
        return [r.as_dict(3, "_per_txn") for r in analysis.operations]
    if table == "changes":
        return [_change(c) for c in analysis.changes]
    if table == "precision":
        return [_answer(a) for a in analysis.answers]
    if table == "costs":
        return [_cost(name, row) for name, rows in analysis.costs.items() for row in rows]
    return _transactions(analysis)


def _transactions(analysis: Analysis) -> list[dict[str, Any]]:
    rows = []
    for cell in analysis.dataset.cells:
        if cell.kind_results is None:
            continue
        types = cell.kind_results.transactions
        ended = sum(kind.ended for kind in types)
        nopm, warehouses = cell.metric(NOPM), cell.metric(WAREHOUSES_ACTIVE)
        for kind in types:
            times = service_times(kind.histogram)
            service = (
                [times.avg, *times.percentiles, times.max]
                if times
                else [None] * (len(SERVICE_PERCENTILES) + 2)
            )
            rows.append(
                {
                    **{c: getattr(cell, c) for c in IDENTITY_COLUMNS},
                    "type": kind.name,
                    "committed": kind.committed,
                    "rollbacks": kind.rollbacks,
                    "retries": kind.retries,
                    "gave_up": kind.gave_up,
                    "transaction_errors": " ".join(f"{c}={n}" for c, n in kind.errors),
                    "share_pct": _round(100 * kind.ended / ended, 3) if ended else None,
                    **dict(zip(SERVICE_COLUMNS, (_round(ms, 3) for ms in service), strict=True)),
                    **{m: _kind_figure(cell, m) for m in KIND_METRICS},
                    "efficiency_pct": _round(efficiency_pct(nopm, warehouses), 2),
                }
            )
    return rows


def _kind_figure(cell: CellRecord, metric: str) -> float | int | None:
    value = cell.metric(metric)
    if value is not None and metric in (CONSISTENCY_CHECKED, CONSISTENCY_FAILED):
        return int(value)  # conditions counted
    return _round(value, 2)


def _answer(answer: Answer) -> dict[str, Any]:
    diff, low, high = _bounds(answer.comparison.estimate if answer.comparison else None, 2)
    return {
        "comparison": answer.label,
        "a": " ".join(map(str, answer.a)),
        "b": " ".join(map(str, answer.b)),
        "measure": answer.measure.name,
        "diff_pct": diff,
        "ci_low_pct": low,
        "ci_high_pct": high,
        "confidence": TOST_CONFIDENCE,
        "verdict": answer.verdict,
        "rounds": answer.rounds,
        "margin_pct": answer.margin_pct,
        "detectable_pct": _round(answer.detectable_pct, 2),
    }


def _cost(measure: str, row: ProgressionRow) -> dict[str, Any]:
    diff, low, high = _bounds(row.change.estimate if row.change else None, 2)
    return {
        "measure": measure,
        "family": row.family,
        "scenario": row.scenario,
        "tier": row.tier,
        "threads": row.threads,
        "baseline": row.baseline_engine,
        "engine": row.engine,
        "baseline_cost": _round(row.baseline.whole_run, 3),
        "cost": _round(row.value.whole_run, 3),
        "diff_pct": diff,
        "ci_low_pct": low,
        "ci_high_pct": high,
        "verdict": row.change.verdict if row.change else None,
    }


def _change(change: Change) -> dict[str, Any]:
    diff, low, high = _bounds(change.size.estimate if change.size else None, 1)
    return {
        "series": change.series,
        "scenario": change.scenario,
        "tier": change.tier,
        "threads": change.threads,
        "last_good": change.last_good,
        "first_changed": change.first_changed,
        "change_pct": _round(change.change_pct, 1),
        "pvalue": change.pvalue,
        "diff_pct": diff,
        "ci_low_pct": low,
        "ci_high_pct": high,
        "verdict": change.size.verdict if change.size else None,
    }


# What a spreadsheet reads as the start of a formula (OWASP, CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text(text: str) -> str:
    """A text cell (a name, a note) a spreadsheet shows as the text it is, never runs as a
    formula: one that starts like a formula gets a quote before it. Numbers are written as
    numbers and never pass here, so a fall of -3.2% stays a number."""
    return "'" + text if text.startswith(_FORMULA_START) else text


def to_csv(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(
            {
                k: "" if row[k] is None else csv_text(row[k]) if isinstance(row[k], str) else row[k]
                for k in columns
            }
        )
    return buffer.getvalue()


def to_json(rows: list[dict[str, Any]]) -> str:
    return json.dumps(rows, indent=2) + "\n"
