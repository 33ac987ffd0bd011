"""The ledger: every cell, its status and its numbers in one SQLite file (WAL mode).

Each finished cell is written in a single transaction, so a run killed at any moment
leaves either the whole cell or none of it; cells marked running when a run died are
put back to pending on the next run.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from oltplab.errors import OltplabError
from oltplab.plan import Cell
from oltplab.sysbench import Interval, Summary

SCHEMA_VERSION = 4
# How to bring an older ledger up to date, step by step; each step runs in one transaction.
# (Tables new in a version need no step: the schema below creates them.)
MIGRATIONS: dict[int, list[str]] = {
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
}
LEDGER_NAME = "ledger.sqlite"

_SCHEMA = """
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
    scenario TEXT NOT NULL,
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
    total_time_s REAL, events INTEGER
);
CREATE TABLE IF NOT EXISTS samples (
    cell_id INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
    second REAL NOT NULL,
    threads INTEGER, tps REAL, qps REAL, reads_per_s REAL, writes_per_s REAL, other_per_s REAL,
    lat_pct_ms REAL, errors_per_s REAL, reconnects_per_s REAL,
    PRIMARY KEY (cell_id, second)
);
-- OS and engine series on the sysbench clock: second k covers (k-1, k] of the run.
CREATE TABLE IF NOT EXISTS telemetry (
    cell_id INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
    source TEXT NOT NULL, metric TEXT NOT NULL, second INTEGER NOT NULL, value REAL NOT NULL,
    PRIMARY KEY (cell_id, source, metric, second)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS variables (
    engine TEXT NOT NULL, tier TEXT NOT NULL, workload TEXT NOT NULL,
    name TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (engine, tier, workload, name)
);
"""


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Ledger:
    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._db = connection
        self.path = path

    @classmethod
    def open(cls, results: Path, *, create: bool = True) -> Ledger:
        path = results / LEDGER_NAME
        if not create and not path.is_file():
            raise OltplabError(f"{results}: no oltplab results here ({LEDGER_NAME} is missing)")
        results.mkdir(parents=True, exist_ok=True)
        try:
            db = sqlite3.connect(path, isolation_level=None, timeout=30)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA foreign_keys=ON")
            db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise OltplabError(f"{path}: not a readable oltplab ledger: {exc}") from None
        ledger = cls(db, path)
        stored = ledger.meta("schema_version")
        if stored is None:
            ledger.set_meta("schema_version", str(SCHEMA_VERSION))
        elif int(stored) > SCHEMA_VERSION:
            raise OltplabError(
                f"{path}: written by a newer oltplab (schema {stored}); upgrade oltplab to read it"
            )
        else:
            ledger._migrate(int(stored))
        return ledger

    def _migrate(self, version: int) -> None:
        while version < SCHEMA_VERSION:
            with self.transaction() as db:
                for statement in MIGRATIONS[version]:
                    db.execute(statement)
                version += 1
                db.execute(
                    "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),)
                )

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # --- meta and runs ------------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def begin_run(self, spec_digest: str, provenance: dict[str, Any]) -> int:
        cursor = self._db.execute(
            "INSERT INTO runs (started_at, status, spec_digest, provenance) VALUES (?, ?, ?, ?)",
            (now(), "running", spec_digest, json.dumps(provenance, sort_keys=True)),
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def finish_run(self, run_id: int, status: str) -> None:
        self._db.execute(
            "UPDATE runs SET finished_at = ?, status = ? WHERE id = ?", (now(), status, run_id)
        )

    def runs(self) -> list[sqlite3.Row]:
        return self._query("SELECT * FROM runs ORDER BY id")

    # --- engines and variables ----------------------------------------------------------------

    def record_engine(self, name: str, **fields: Any) -> None:
        columns = ["name", *fields]
        values = [name, *(json.dumps(v) if isinstance(v, dict) else v for v in fields.values())]
        updates = ", ".join(f"{c} = excluded.{c}" for c in fields)
        self._db.execute(
            f"INSERT INTO engines ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
            f" ON CONFLICT(name) DO UPDATE SET {updates}",
            values,
        )

    def engines(self) -> dict[str, sqlite3.Row]:
        return {row["name"]: row for row in self._query("SELECT * FROM engines")}

    def record_variables(
        self, engine: str, tier: str, workload: str, values: dict[str, str]
    ) -> None:
        with self.transaction() as db:
            db.execute(
                "DELETE FROM variables WHERE engine = ? AND tier = ? AND workload = ?",
                (engine, tier, workload),
            )
            db.executemany(
                "INSERT INTO variables VALUES (?, ?, ?, ?, ?)",
                [(engine, tier, workload, name, value) for name, value in values.items()],
            )

    # --- cells --------------------------------------------------------------------------------

    def definitions(self) -> dict[str, str]:
        return {
            str(key): str(definition)
            for key, definition in self._db.execute("SELECT key, definition FROM cells")
        }

    def register(self, cells: Iterable[tuple[Cell, str]]) -> None:
        with self.transaction() as db:
            db.executemany(
                "INSERT OR IGNORE INTO cells (key, engine, tier, workload, scenario, threads,"
                " repetition, definition, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
                [
                    (c.key, c.engine, c.tier, c.workload, c.scenario, c.threads, c.repetition, d)
                    for c, d in cells
                ],
            )

    def requeue(self, *, failed_too: bool) -> int:
        """Cells a killed run left running (and failed ones, if asked) go back to pending."""
        states = ("running", "failed") if failed_too else ("running",)
        marks = ", ".join("?" * len(states))
        with self.transaction() as db:
            db.execute(
                f"DELETE FROM summaries WHERE cell_id IN "
                f"(SELECT id FROM cells WHERE status IN ({marks}))",
                states,
            )
            for table in ("samples", "telemetry"):
                db.execute(
                    f"DELETE FROM {table} WHERE cell_id IN "
                    f"(SELECT id FROM cells WHERE status IN ({marks}))",
                    states,
                )
            cursor = db.execute(
                f"UPDATE cells SET status = 'pending', reason = NULL WHERE status IN ({marks})",
                states,
            )
        return cursor.rowcount

    def status_of(self) -> dict[str, str]:
        return {str(k): str(s) for k, s in self._db.execute("SELECT key, status FROM cells")}

    def mark_running(self, cell: Cell, run_id: int) -> None:
        self._db.execute(
            "UPDATE cells SET status = 'running', run_id = ?, started_at = ?, finished_at = NULL,"
            " attempts = attempts + 1 WHERE key = ?",
            (run_id, now(), cell.key),
        )

    def record_result(
        self,
        cell: Cell,
        summary: Summary | None,
        intervals: Iterable[Interval],
        flags: list[str],
        artifact: str,
        reason: str | None = None,
        notes: str = "",
        telemetry: Iterable[tuple[str, str, int, float]] = (),
    ) -> None:
        """A measured cell in one transaction: done with its summary, or failed with a reason.

        The per-second samples and telemetry are kept either way: a truncated run still
        shows its timeline.
        """
        status = "done" if summary is not None and reason is None else "failed"
        with self.transaction() as db:
            cell_id = self._cell_id(cell)
            for table in ("samples", "telemetry", "summaries"):
                db.execute(f"DELETE FROM {table} WHERE cell_id = ?", (cell_id,))
            if summary is not None:
                db.execute(
                    "INSERT INTO summaries VALUES"
                    " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        cell_id,
                        summary.tps,
                        summary.qps,
                        summary.reads_per_s,
                        summary.writes_per_s,
                        summary.other_per_s,
                        summary.transactions,
                        summary.queries,
                        summary.errors,
                        summary.errors_per_s,
                        summary.reconnects,
                        summary.reconnects_per_s,
                        summary.lat_min_ms,
                        summary.lat_avg_ms,
                        summary.lat_max_ms,
                        summary.lat_pct_ms,
                        summary.percentile,
                        summary.total_time_s,
                        summary.events,
                    ),
                )
            db.executemany(
                "INSERT OR REPLACE INTO samples VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        cell_id,
                        i.second,
                        i.threads,
                        i.tps,
                        i.qps,
                        i.reads_per_s,
                        i.writes_per_s,
                        i.other_per_s,
                        i.lat_pct_ms,
                        i.errors_per_s,
                        i.reconnects_per_s,
                    )
                    for i in intervals
                ],
            )
            db.executemany(
                "INSERT OR REPLACE INTO telemetry VALUES (?, ?, ?, ?, ?)",
                [(cell_id, *row) for row in telemetry],
            )
            db.execute(
                "UPDATE cells SET status = ?, reason = ?, finished_at = ?, artifact = ?,"
                " flags = ?, notes = ? WHERE id = ?",
                (status, reason, now(), artifact, ",".join(flags), notes, cell_id),
            )

    def redefine(self, cell: Cell, definition: str) -> None:
        self._db.execute("UPDATE cells SET definition = ? WHERE key = ?", (definition, cell.key))

    def record_failed(self, cell: Cell, reason: str, artifact: str | None) -> None:
        self._db.execute(
            "UPDATE cells SET status = 'failed', reason = ?, finished_at = ?, artifact = ?"
            " WHERE key = ?",
            (reason, now(), artifact, cell.key),
        )

    def _cell_id(self, cell: Cell) -> int:
        row = self._db.execute("SELECT id FROM cells WHERE key = ?", (cell.key,)).fetchone()
        if row is None:
            raise KeyError(cell.key)
        return int(row[0])

    # --- reading ------------------------------------------------------------------------------

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        self._db.row_factory = sqlite3.Row
        try:
            return list(self._db.execute(sql, args))
        finally:
            self._db.row_factory = None

    def cells(self) -> list[sqlite3.Row]:
        return self._query(
            "SELECT c.*, s.*, e.family, e.version, e.server_version FROM cells c"
            " LEFT JOIN summaries s ON s.cell_id = c.id"
            " LEFT JOIN engines e ON e.name = c.engine ORDER BY c.id"
        )

    def tps_series(self) -> dict[str, list[float]]:
        """Every cell's per-second TPS, in second order."""
        series: dict[str, list[float]] = {}
        for key, tps in self._db.execute(
            "SELECT c.key, s.tps FROM samples s JOIN cells c ON c.id = s.cell_id"
            " ORDER BY s.cell_id, s.second"
        ):
            series.setdefault(str(key), []).append(float(tps))
        return series

    def telemetry(
        self, wanted: Callable[[str, str], bool] = lambda source, metric: True
    ) -> dict[str, dict[tuple[str, str], list[tuple[int, float]]]]:
        """Series by cell key and (source, metric), in second order; those wanted."""
        found: dict[str, dict[tuple[str, str], list[tuple[int, float]]]] = {}
        for key, source, metric, second, value in self._db.execute(
            "SELECT c.key, t.source, t.metric, t.second, t.value FROM telemetry t"
            " JOIN cells c ON c.id = t.cell_id ORDER BY t.cell_id, t.source, t.metric, t.second"
        ):
            if not wanted(source, metric):
                continue
            found.setdefault(str(key), {}).setdefault((str(source), str(metric)), []).append(
                (int(second), float(value))
            )
        return found

    def variables_by_tier(self) -> dict[tuple[str, str], dict[str, str]]:
        found: dict[tuple[str, str], dict[str, str]] = {}
        for engine, tier, name, value in self._db.execute(
            "SELECT engine, tier, name, value FROM variables ORDER BY engine, tier, workload"
        ):
            found.setdefault((str(engine), str(tier)), {}).setdefault(str(name), str(value))
        return found

    def counts(self) -> dict[str, int]:
        counts = {"pending": 0, "running": 0, "done": 0, "failed": 0}
        for status, count in self._db.execute("SELECT status, COUNT(*) FROM cells GROUP BY 1"):
            counts[str(status)] = int(count)
        return counts
