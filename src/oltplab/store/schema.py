"""The ledger's tables, and how older ledgers are brought up to date."""

import sqlite3
from collections.abc import Callable

from oltplab.store.series import CHUNKED_SAMPLES, rows_to_chunks


def _add_column(db: sqlite3.Connection, table: str, column: str) -> None:
    """A column a table made by this schema already has (an older ledger may lack the
    whole table, which the schema then creates as it is now)."""
    names = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
    if column.split()[0] not in names:
        db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")


SCHEMA_VERSION = 8
# The tables that hold what a cell measured, emptied when it is measured again.
CELL_RESULT_TABLES = (
    "summaries", "samples", "telemetry", "latency_histograms", "ignored_errors",
    "transaction_types", "transaction_errors", "transaction_latency", "cell_metrics",
)  # fmt: skip
# How to bring an older ledger up to date, step by step; each step runs in one transaction.
# (Tables new in a version need no step: the schema below creates them.)
MIGRATIONS: dict[int, list[str | Callable[[sqlite3.Connection], None]]] = {
    1: ["ALTER TABLE cells ADD COLUMN notes TEXT NOT NULL DEFAULT ''"],
    2: [],
    # Workloads other than oltp_read_write / oltp_read_only became scenarios of their own
    # (they shared rw-* / ro-* before): "rw-local" -> "<workload>-local", key to match.
    3: [
        "UPDATE cells SET scenario = workload || substr(scenario, 3)"
        " WHERE workload NOT IN ('oltp_read_write', 'oltp_read_only')",
        "UPDATE cells SET key = engine || '|' || scenario || '|' || tier || '|' || workload"
        " || '|' || threads || '|' || repetition"
        " WHERE workload NOT IN ('oltp_read_write', 'oltp_read_only')",
    ],
    # Per-second samples: a row per second became a row per chunk of seconds (store/series).
    4: [rows_to_chunks],
    # Where sysbench ran became a column of its own; before, only the scenario's name
    # said it, and this is the one place that reads it from there.
    5: [
        "ALTER TABLE cells ADD COLUMN network INTEGER NOT NULL DEFAULT 0",
        "UPDATE cells SET network = 1 WHERE scenario LIKE '%-network'",
    ],
    # Outputs report every N seconds, not only every second; ledgers before this one
    # held 1 s series only (runs and imports alike).
    6: [
        lambda db: _add_column(db, "summaries", "interval_s REAL"),
        "UPDATE summaries SET interval_s = 1 WHERE cell_id IN (SELECT cell_id FROM samples)",
    ],
    # Open-loop cells: the rate offered is a dimension of the matrix, as threads are.
    7: [lambda db: _add_column(db, "cells", "rate INTEGER NOT NULL DEFAULT 0")],
}


SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL,
    spec_digest TEXT NOT NULL,
    provenance TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS engines (
    name TEXT PRIMARY KEY,
    family TEXT NOT NULL,
    version TEXT NOT NULL,
    server_version TEXT,
    source TEXT NOT NULL,
    binary_sha256 TEXT,
    archive_sha256 TEXT,
    artifact_dir TEXT
);
CREATE TABLE IF NOT EXISTS cells (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    engine TEXT NOT NULL,
    tier TEXT NOT NULL,
    workload TEXT NOT NULL,
    scenario TEXT NOT NULL,  -- its name, for people reading the ledger; code reads the columns
    network INTEGER NOT NULL DEFAULT 0,
    rate INTEGER NOT NULL DEFAULT 0,  -- transactions a second offered; 0: closed loop
    threads INTEGER NOT NULL,
    repetition INTEGER NOT NULL,
    definition TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed')),
    reason TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    run_id INTEGER REFERENCES runs(id),
    started_at TEXT,
    finished_at TEXT,
    artifact TEXT,
    flags TEXT NOT NULL DEFAULT '',
    notes TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS summaries (
    cell_id INTEGER PRIMARY KEY REFERENCES cells(id) ON DELETE CASCADE,
    tps REAL, qps REAL, reads_per_s REAL, writes_per_s REAL, other_per_s REAL,
    transactions INTEGER, queries INTEGER,
    errors INTEGER, errors_per_s REAL, reconnects INTEGER, reconnects_per_s REAL,
    lat_min_ms REAL, lat_avg_ms REAL, lat_max_ms REAL, lat_pct_ms REAL, percentile INTEGER,
    total_time_s REAL, events INTEGER, interval_s REAL
);
-- sysbench's --histogram: events per latency bucket (its own fixed buckets, so the
-- histograms of repetitions merge by adding counts).
CREATE TABLE IF NOT EXISTS latency_histograms (
    cell_id INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
    value_ms REAL NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY (cell_id, value_ms)
) WITHOUT ROWID;
-- Errors sysbench ignored, by code (MySQL's number, PostgreSQL's SQLSTATE), as the gate
-- counted them; the raw file holds them too.
CREATE TABLE IF NOT EXISTS ignored_errors (
    cell_id INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
    code TEXT NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY (cell_id, code)
) WITHOUT ROWID;
-- OS and engine series on the sysbench clock: second k covers (k-1, k] of the run.
CREATE TABLE IF NOT EXISTS telemetry (
    cell_id INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
    source TEXT NOT NULL, metric TEXT NOT NULL, second INTEGER NOT NULL, value REAL NOT NULL,
    PRIMARY KEY (cell_id, source, metric, second)
) WITHOUT ROWID;
-- Results a cell had before it was measured again (--rerun-disturbed): the figures of each
-- earlier measurement, kept with its flags and raw files, never shown as the cell's own.
CREATE TABLE IF NOT EXISTS superseded (
    id INTEGER PRIMARY KEY,
    cell_id INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
    finished_at TEXT, artifact TEXT, flags TEXT NOT NULL, notes TEXT NOT NULL,
    tps REAL, total_time_s REAL, why TEXT NOT NULL
);
-- What a workload kind measured beyond sysbench's summary (sysbench/transactions.py): per
-- transaction type, its errors by code and its service-time histogram (sysbench's
-- buckets), and the cell's own metrics (the TPC-C-like kind's NOPM, both ways).
CREATE TABLE IF NOT EXISTS transaction_types (
    cell_id INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
    type TEXT NOT NULL, committed INTEGER NOT NULL, rollbacks INTEGER NOT NULL,
    retries INTEGER NOT NULL, gave_up INTEGER NOT NULL,
    PRIMARY KEY (cell_id, type)
);  -- with its rowid: the kind's order of types, as they were written
CREATE TABLE IF NOT EXISTS transaction_errors (
    cell_id INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
    type TEXT NOT NULL, code TEXT NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY (cell_id, type, code)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS transaction_latency (
    cell_id INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
    type TEXT NOT NULL, value_ms REAL NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY (cell_id, type, value_ms)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cell_metrics (
    cell_id INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
    metric TEXT NOT NULL, value REAL NOT NULL,
    PRIMARY KEY (cell_id, metric)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS variables (
    engine TEXT NOT NULL, tier TEXT NOT NULL, workload TEXT NOT NULL,
    name TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (engine, tier, workload, name)
);
"""
    + CHUNKED_SAMPLES
    + ";\n"
)
