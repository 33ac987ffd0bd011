"""Flat exports: the measured cells, and the report's tables, as CSV or JSON."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from typing import Any

from oltplab.analysis.dataset import Dataset
from oltplab.analysis.tables import differences, findings, flagged, progression

CELL_COLUMNS = (
    "scenario",
    "family",
    "version",
    "engine",
    "tier",
    "workload",
    "threads",
    "repetition",
    "status",
    "tps",
    "qps",
    "reads_per_s",
    "writes_per_s",
    "other_per_s",
    "lat_avg_ms",
    "lat_p95_ms",
    "lat_max_ms",
    "errors_per_s",
    "reconnects_per_s",
    "duration_s",
    "flags",
)
PROGRESSION_COLUMNS = (
    "scenario",
    "tier",
    "family",
    "baseline_version",
    "version",
    "threads",
    "tps",
    "baseline_tps",
    "diff_pct",
)
FINDING_COLUMNS = ("kind", "scenario", "tier", "engine", "value", "detail")
FLAG_COLUMNS = (
    "scenario",
    "engine",
    "tier",
    "workload",
    "threads",
    "repetition",
    "status",
    "flags",
    "reason",
)
_RENAMED = {"lat_p95_ms": "lat_pct_ms", "duration_s": "total_time_s"}
TABLES = ("summary", "progression", "differences", "findings", "flags")


def cell_rows(cells: list[sqlite3.Row]) -> list[dict[str, Any]]:
    """Measured cells (done or failed) in ledger order; pending cells have nothing to export."""
    rows = []
    for cell in cells:
        if cell["status"] not in ("done", "failed"):
            continue
        row = {column: cell[_RENAMED.get(column, column)] for column in CELL_COLUMNS}
        row["flags"] = row["flags"] or ""
        rows.append(row)
    return rows


def table_rows(
    table: str, dataset: Dataset, *, baselines: list[str] | None = None, threshold: float = 5.0
) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
    """Columns and rows of one of the report's tables (not `summary`, which is per cell)."""
    if table in ("progression", "differences"):
        rows = progression(dataset, baselines)
        if table == "differences":
            rows = differences(rows, threshold)
        return PROGRESSION_COLUMNS, [
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
            }
            for r in rows
        ]
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
            for f in findings(dataset)
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
            }
            for c in flagged(dataset)
        ]
    raise ValueError(f"unknown table {table!r}")


def to_csv(rows: list[dict[str, Any]], columns: tuple[str, ...] = CELL_COLUMNS) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if row[k] is None else row[k] for k in columns})
    return buffer.getvalue()


def to_json(rows: list[dict[str, Any]]) -> str:
    return json.dumps(rows, indent=2) + "\n"
