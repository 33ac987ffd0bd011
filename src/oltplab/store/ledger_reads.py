"""What the ledger holds, read back: the cells, their series, telemetry, histograms, errors
and a workload kind's figures, every row checked against its columns' types as it is read
(store/ledger.py writes them)."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import numpy as np

from oltplab.store.files import os_problem
from oltplab.store.integrity import (
    NUMBER,
    check_cell_row,
    sqlite_problem,
    value_problem,
    wrong_value,
)
from oltplab.store.rows import CELLS_QUERY, CellRow
from oltplab.store.series import decode
from oltplab.store.status import Status
from oltplab.sysbench.transactions import KindResults, TransactionType

P = ParamSpec("P")
R = TypeVar("R")


def _guarded(method: Callable[P, R]) -> Callable[P, R]:
    """SQLite's and the OS's errors as one line naming the ledger (disk full, damage...)."""

    @functools.wraps(method)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        ledger = args[0]
        assert isinstance(ledger, LedgerReads)
        try:
            return method(*args, **kwargs)
        except sqlite3.Error as exc:
            raise sqlite_problem(exc, ledger.path) from None
        except OSError as exc:
            raise os_problem(exc, ledger.path) from None

    return guarded


class LedgerReads:
    _db: sqlite3.Connection
    path: Path

    # --- reading ------------------------------------------------------------------------------

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        self._db.row_factory = sqlite3.Row
        try:
            return list(self._db.execute(sql, args))
        finally:
            self._db.row_factory = None

    @_guarded
    def cells(self) -> list[CellRow]:
        """Every cell of the matrix, in the order it was registered."""
        return [CellRow.of(row) for row in self.cell_rows()]

    def cell_rows(self) -> list[sqlite3.Row]:
        """The cells as the ledger's rows (for the store's own journal), checked."""
        return [check_cell_row(self.path, row) for row in self._query(CELLS_QUERY)]

    @_guarded
    def tps_series(self) -> dict[str, np.ndarray]:
        """Every cell's per-second TPS, in second order."""
        parts: dict[str, list[np.ndarray]] = {}
        for key, tps in self._db.execute(
            "SELECT c.key, s.tps FROM samples s JOIN cells c ON c.id = s.cell_id"
            " ORDER BY s.cell_id, s.chunk"
        ):
            values = decode(tps)
            if values is None:
                raise value_problem(
                    self.path, f"per-second samples of {key!r}", "tps", tps, "an array of floats"
                )
            parts.setdefault(str(key), []).append(values)
        return {key: np.concatenate(found) for key, found in parts.items()}

    @_guarded
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
            if wrong_value(value, NUMBER, nullable=False):
                raise value_problem(self.path, f"telemetry of {key!r}", metric, value, NUMBER)
            found.setdefault(str(key), {}).setdefault((str(source), str(metric)), []).append(
                (int(second), float(value))
            )
        return found

    def _per_cell(self, table: str, columns: str, order: str) -> dict[str, list[tuple[Any, int]]]:
        found: dict[str, list[tuple[Any, int]]] = {}
        for key, value, count in self._db.execute(
            f"SELECT c.key, {columns} FROM {table} t JOIN cells c ON c.id = t.cell_id"
            f" ORDER BY t.cell_id, {order}"
        ):
            found.setdefault(str(key), []).append((value, int(count)))
        return found

    @_guarded
    def latency_histograms(self) -> dict[str, list[tuple[float, int]]]:
        """Each cell's --histogram buckets (latency in ms, events), where it printed one."""
        return self._per_cell("latency_histograms", "t.value_ms, t.count", "t.value_ms")

    @_guarded
    def ignored_errors(self) -> dict[str, list[tuple[str, int]]]:
        """Each cell's ignored errors by code, most frequent first, where it had any."""
        return self._per_cell("ignored_errors", "t.code, t.count", "t.count DESC, t.code")

    @_guarded
    def variables_by_tier(self) -> dict[tuple[str, str], dict[str, str]]:
        found: dict[tuple[str, str], dict[str, str]] = {}
        for engine, tier, name, value in self._db.execute(
            "SELECT engine, tier, name, value FROM variables ORDER BY engine, tier, workload"
        ):
            found.setdefault((str(engine), str(tier)), {}).setdefault(str(name), str(value))
        return found

    @_guarded
    def counts(self) -> dict[str, int]:
        found = dict(self._db.execute("SELECT status, COUNT(*) FROM cells GROUP BY 1"))
        return {str(status): int(found.get(status, 0)) for status in Status}

    @_guarded
    def kind_results(self) -> dict[str, KindResults]:
        """What each cell's workload kind measured beyond sysbench's summary, where it did:
        per transaction type (its errors and service-time histogram) and the cell's own
        metrics (the per-second series stays with the telemetry)."""
        errors = self._per_type("transaction_errors", "code")
        latency = self._per_type("transaction_latency", "value_ms")
        types: dict[str, list[TransactionType]] = {}
        for key, name, committed, rollbacks, retries, gave_up in self._db.execute(
            "SELECT c.key, t.type, t.committed, t.rollbacks, t.retries, t.gave_up"
            " FROM transaction_types t JOIN cells c ON c.id = t.cell_id ORDER BY t.cell_id, t.rowid"
        ):
            types.setdefault(str(key), []).append(
                TransactionType(
                    str(name),
                    int(committed),
                    int(rollbacks),
                    int(retries),
                    int(gave_up),
                    tuple((str(code), n) for code, n in errors.get((key, name), ())),
                    tuple((float(ms), n) for ms, n in latency.get((key, name), ())),
                )
            )
        figures: dict[str, dict[str, float]] = {}
        for key, metric, value in self._db.execute(
            "SELECT c.key, t.metric, t.value FROM cell_metrics t JOIN cells c ON c.id = t.cell_id"
        ):
            if wrong_value(value, NUMBER, nullable=False):
                raise value_problem(self.path, f"cell_metrics of {key!r}", metric, value, NUMBER)
            figures.setdefault(str(key), {})[str(metric)] = float(value)
        return {
            key: KindResults(tuple(types.get(key, ())), figures.get(key, {}))
            for key in types.keys() | figures.keys()
        }

    def _per_type(self, table: str, column: str) -> dict[tuple[str, str], list[tuple[Any, int]]]:
        found: dict[tuple[str, str], list[tuple[Any, int]]] = {}
        for key, name, value, count in self._db.execute(
            f"SELECT c.key, t.type, t.{column}, t.count FROM {table} t"
            f" JOIN cells c ON c.id = t.cell_id ORDER BY t.cell_id, t.{column}"
        ):
            found.setdefault((str(key), str(name)), []).append((value, int(count)))
        return found
