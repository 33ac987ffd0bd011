"""One cell's result being written inside the ledger's transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from datetime import UTC, datetime

import numpy as np

from oltplab.base import metrics
from oltplab.plan import Cell
from oltplab.store.integrity import SUMMARY_COLUMNS
from oltplab.store.journal import Record
from oltplab.store.outcome import CellOutcome
from oltplab.store.series import INSERT, chunk_rows
from oltplab.sysbench.transactions import KindResults


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class CellRecording:
    """A cell's samples as they come, then its summary or failure (`finish`)."""

    def __init__(
        self, log: Callable[[Record], None], db: sqlite3.Connection, cell: Cell, cell_id: int
    ) -> None:
        self._log = log
        self._db = db
        self._cell = cell
        self._id = cell_id
        self.finished = False

    def samples(self, blocks: Iterable[np.ndarray]) -> None:
        """Per-interval samples (rows of SAMPLE_COLUMNS), consumed a block at a time as they
        come (a chunk is all that is held)."""
        self._db.executemany(INSERT, chunk_rows(self._id, blocks))

    def finish(self, outcome: CellOutcome) -> None:
        """Done with its summary, or failed with a reason (its samples come by `samples`).
        The journal keeps all but the series, the latency histogram and the ignored errors by
        code, which the raw files hold."""
        status = outcome.status
        finished_at = outcome.finished_at or now()
        columns = None
        if outcome.summary is not None:
            columns = {column: getattr(outcome.summary, column) for column in SUMMARY_COLUMNS}
        self._log(
            {
                "type": "result",
                "key": self._cell.key,
                "status": status,
                "summary": columns,
                "flags": list(outcome.flags),
                "artifact": outcome.artifact,
                "reason": outcome.reason,
                "notes": outcome.notes,
                "clock": outcome.clock,
                "finished_at": finished_at,
            }
        )
        if columns is not None:
            self._db.execute(
                f"INSERT INTO summaries ({', '.join(columns)}, cell_id)"
                f" VALUES ({'?, ' * len(columns)}?)",
                (*columns.values(), self._id),
            )
        self._db.executemany(
            "INSERT OR REPLACE INTO telemetry VALUES (?, ?, ?, ?, ?)",
            ((self._id, *row) for row in outcome.telemetry),
        )
        self._db.executemany(
            "INSERT OR REPLACE INTO latency_histograms VALUES (?, ?, ?)",
            ((self._id, value, count) for value, count in outcome.histogram),
        )
        self._db.executemany(
            "INSERT OR REPLACE INTO ignored_errors VALUES (?, ?, ?)",
            ((self._id, code, count) for code, count in outcome.ignored_errors),
        )
        if outcome.kind_results is not None:
            self._kind_results(outcome.kind_results)
        self._db.execute(
            "UPDATE cells SET status = ?, reason = ?, finished_at = ?, artifact = ?,"
            " flags = ?, notes = ? WHERE id = ?",
            (
                status,
                outcome.reason,
                finished_at,
                outcome.artifact,
                ",".join(outcome.flags),
                outcome.notes,
                self._id,
            ),
        )
        self.finished = True

    def _kind_results(self, results: KindResults) -> None:
        db, cell_id = self._db, self._id
        for kind in results.transactions:
            db.execute(
                "INSERT OR REPLACE INTO transaction_types VALUES (?, ?, ?, ?, ?, ?)",
                (cell_id, kind.name, kind.committed, kind.rollbacks, kind.retries, kind.gave_up),
            )
            db.executemany(
                "INSERT OR REPLACE INTO transaction_errors VALUES (?, ?, ?, ?)",
                ((cell_id, kind.name, code, count) for code, count in kind.errors),
            )
            db.executemany(
                "INSERT OR REPLACE INTO transaction_latency VALUES (?, ?, ?, ?)",
                ((cell_id, kind.name, value, count) for value, count in kind.histogram),
            )
        db.executemany(
            "INSERT OR REPLACE INTO cell_metrics VALUES (?, ?, ?)",
            ((cell_id, metric, value) for metric, value in results.metrics.items()),
        )
        db.executemany(
            "INSERT OR REPLACE INTO telemetry VALUES (?, ?, ?, ?, ?)",
            ((cell_id, metrics.WORKLOAD, *point) for point in results.series),
        )
