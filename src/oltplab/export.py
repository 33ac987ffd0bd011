"""Flat exports: the measured cells and the report's tables, as CSV or JSON."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

from oltplab.analysis.dataset import Dataset
from oltplab.analysis.tables import differences, findings, flagged, progression, stability
from oltplab.analysis.telemetry import operation_table

# fmt: off
CELL_COLUMNS = (
    "scenario", "family", "version", "engine", "tier", "workload", "threads", "repetition",
    "status", "tps", "qps", "reads_per_s", "writes_per_s", "other_per_s", "lat_avg_ms",
    "lat_p95_ms", "lat_max_ms", "errors_per_s", "reconnects_per_s", "duration_s", "flags",
)
SUMMARY_COLUMNS = (*CELL_COLUMNS, "tps_ci_low", "tps_ci_high", "cv", "steady_from_s", "notes")
PROGRESSION_COLUMNS = (
    "scenario", "tier", "family", "baseline_version", "version", "threads", "tps",
    "baseline_tps", "diff_pct", "ci_low_pct", "ci_high_pct", "verdict", "n",
)
FINDING_COLUMNS = ("kind", "scenario", "tier", "engine", "value", "detail")
OPERATION_COLUMNS = (
    "scenario", "tier", "workload", "engine", "threads", "runs", "tps", "cpu_us_per_txn",
    "context_switches_per_txn", "kb_read_per_txn", "kb_written_per_txn", "redo_bytes_per_txn",
)
FLAG_COLUMNS = (
    "scenario", "engine", "tier", "workload", "threads", "repetition", "status", "flags",
    "reason", "notes",
)
# fmt: on


def salvaged_row(values: dict[str, Any]) -> dict[str, Any]:
    """A row read from a damaged ledger, in the summary table's columns."""
    renamed = {"lat_p95_ms": "lat_pct_ms", "duration_s": "total_time_s"}
    return {column: values.get(renamed.get(column, column)) for column in CELL_COLUMNS}


def _round(value: float | None, digits: int) -> float | None:
    if value is None or math.isnan(value):
        return None
    return round(value, digits)


def _summary(dataset: Dataset) -> list[dict[str, Any]]:
    """One row per measured cell (done or failed), with its steady-state statistics."""
    stats = {s.cell.key: s for s in stability(dataset)}
    rows = []
    for cell in dataset.cells:
        row: dict[str, Any] = {c: getattr(cell, c) for c in CELL_COLUMNS if c != "flags"}
        found = stats.get(cell.key)
        row |= {
            "flags": ",".join(cell.flags),
            "tps_ci_low": _round(found.ci_low, 2) if found else None,
            "tps_ci_high": _round(found.ci_high, 2) if found else None,
            "cv": _round(found.jitter, 4) if found and found.jitter is not None else None,
            "steady_from_s": found.steady_from_s if found else None,
            "notes": cell.notes,
        }
        rows.append(row)
    return rows


def _progression(dataset: Dataset, rows: list[Any]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        c = r.comparison
        out.append(
            {
                "scenario": r.scenario,
                "tier": r.tier,
                "family": r.family,
                "baseline_version": r.baseline_version,
                "version": r.version,
                "threads": r.threads,
                "tps": round(r.tps, 2),
                "baseline_tps": round(r.baseline_tps, 2),
                "diff_pct": round(r.diff_pct, 1),
                "ci_low_pct": _round(c.low_pct, 1) if c else None,
                "ci_high_pct": _round(c.high_pct, 1) if c else None,
                "verdict": c.verdict if c else "",
                "n": c.n if c else None,
            }
        )
    return out


def table_rows(
    table: str,
    dataset: Dataset,
    *,
    baselines: list[str] | None = None,
    threshold: float = 5.0,
    include_flagged: bool = False,
) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
    """Columns and rows of one table."""
    if table == "summary":
        return SUMMARY_COLUMNS, _summary(dataset)
    if table in ("progression", "differences"):
        rows = progression(dataset, baselines)
        if table == "differences":
            rows = differences(rows, threshold)
        return PROGRESSION_COLUMNS, _progression(dataset, rows)
    if table == "findings":
        return FINDING_COLUMNS, [
            {
                "kind": f.kind,
                "scenario": f.scenario,
                "tier": f.tier,
                "engine": f.engine,
                "value": round(f.value, 3),
                "detail": f.detail,
            }
            for f in findings(dataset, include_flagged=include_flagged)
        ]
    if table == "flags":
        return FLAG_COLUMNS, [
            {
                "scenario": c.scenario,
                "engine": c.engine,
                "tier": c.tier,
                "workload": c.workload,
                "threads": c.threads,
                "repetition": c.repetition,
                "status": c.status,
                "flags": ",".join(c.flags),
                "reason": c.reason,
                "notes": c.notes,
            }
            for c in flagged(dataset)
        ]
    if table == "operations":
        return OPERATION_COLUMNS, [r.as_dict(3, "_per_txn") for r in operation_table(dataset)]
    raise ValueError(f"unknown table {table!r}")


def to_csv(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if row[k] is None else row[k] for k in columns})
    return buffer.getvalue()


def to_json(rows: list[dict[str, Any]]) -> str:
    return json.dumps(rows, indent=2) + "\n"
