"""Flat exports of the ledger: one row per measured cell, as CSV or JSON."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from typing import Any

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
_RENAMED = {"lat_p95_ms": "lat_pct_ms", "duration_s": "total_time_s"}


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


def to_csv(rows: list[dict[str, Any]], columns: tuple[str, ...] = CELL_COLUMNS) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if row[k] is None else row[k] for k in columns})
    return buffer.getvalue()


def to_json(rows: list[dict[str, Any]]) -> str:
    return json.dumps(rows, indent=2) + "\n"
