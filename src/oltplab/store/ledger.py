"""The ledger: every cell, its status and its numbers in one SQLite file (WAL mode).

Each finished cell is written in a single transaction, so a run killed at any moment
leaves either the whole cell or none of it; cells marked running when a run died are
put back to pending on the next run. Every write is first appended to the journal, from
which (with the raw files) a damaged ledger can be rebuilt.

An existing ledger is trusted only after a quick integrity check, and every row is
checked against its columns' types as it is read: damage is told in one line with the way
to recover, never read as if it were data.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from oltplab.base.errors import OltplabError
from oltplab.plan import Cell
from oltplab.store.directory import ResultsDir, check_results
from oltplab.store.files import os_problem
from oltplab.store.integrity import (
    check_file,
    damaged,
    sqlite_problem,
    value_problem,
    wrong_type_query,
)
from oltplab.store.journal import Journal, Record, ledger_records
from oltplab.store.ledger_reads import LedgerReads, _guarded
from oltplab.store.lock import prepare_results
from oltplab.store.outcome import CellOutcome
from oltplab.store.recording import CellRecording, now
from oltplab.store.rows import EngineRow, RunRow, SupersededRow
from oltplab.store.schema import CELL_RESULT_TABLES, MIGRATIONS, SCHEMA, SCHEMA_VERSION
from oltplab.store.status import RunStatus, Status


class Ledger(LedgerReads):
    def __init__(self, connection: sqlite3.Connection, path: Path, journal: Journal | None):
        self._db = connection
        self.path = path
        self._journal = journal
        self._batched: list[Record] | None = None

    @classmethod
    def open(cls, results: Path, *, create: bool = True, journal: bool = True) -> Ledger:
        """The results directory's ledger; `create` for a writer, which may start a new one
        and journals its writes (unless `journal` is off, as when rebuilding one)."""
        path = ResultsDir(results).ledger
        fresh = not path.exists()
        if fresh and not create:
            check_results(results)
        if fresh:
            prepare_results(results)
            _build(path)
        check_file(path)
        ledger: Ledger | None = None
        try:
            db = sqlite3.connect(path, isolation_level=None, timeout=30)
            ledger = cls(db, path, Journal(results) if create and journal else None)
            ledger._configure(fresh=fresh)
        except sqlite3.Error as exc:
            if ledger is not None:
                ledger.close()
            raise sqlite_problem(exc, path) from None
        except BaseException:
            if ledger is not None:
                ledger.close()
            raise
        return ledger

    def _configure(self, *, fresh: bool) -> None:
        db = self._db
        db.execute("PRAGMA synchronous=FULL")
        db.execute("PRAGMA foreign_keys=ON")
        problems = [
            line
            for (said,) in db.execute("PRAGMA quick_check(3)")
            for line in str(said).splitlines()
            if not line.startswith("***")  # "*** in database main ***"
        ]
        if problems != ["ok"]:
            raise damaged(self.path, "; ".join(problems))
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        stored = self.meta("schema_version") if "meta" in tables else None
        if stored is None:
            raise damaged(self.path, "it has no schema version: not an oltplab ledger")
        if not stored.isdigit():
            raise damaged(self.path, f"schema_version holds {stored!r}")
        if int(stored) > SCHEMA_VERSION:
            raise OltplabError(
                f"{self.path}: written by a newer oltplab (schema {stored}); upgrade oltplab "
                "to read it"
            )
        if {"cells", "summaries"} <= tables and stored == str(SCHEMA_VERSION):
            for key, column, value, kind in db.execute(wrong_type_query()):
                raise value_problem(self.path, f"cell {key!r}", column, value, kind)
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(SCHEMA)
        self._migrate(int(stored))
        if self._journal is not None and not self._journal.exists():
            # A ledger from before journals were kept starts its journal with its content.
            self._journal.append(
                {"type": "journal", "schema": SCHEMA_VERSION},
                *([] if fresh else ledger_records(self)),
            )

    def _migrate(self, version: int) -> None:
        while version < SCHEMA_VERSION:
            with self.transaction() as db:
                for step in MIGRATIONS[version]:
                    if isinstance(step, str):
                        db.execute(step)
                    else:
                        step(db)
                version += 1
                db.execute(
                    "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),)
                )

    def close(self) -> None:
        self._db.close()

    def _log(self, *records: Record) -> None:
        """The write, in the journal first: a ledger write the journal lacks never happens.
        Inside a batch the records wait for the batch's one flush, before its commit."""
        if self._journal is None:
            return
        if self._batched is not None:
            self._batched += records
        else:
            self._journal.append(*records)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        if self._db.in_transaction:  # inside a batch: a savepoint of its transaction
            self._db.execute("SAVEPOINT part")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK TO part")
                self._db.execute("RELEASE part")
                raise
            self._db.execute("RELEASE part")
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Many writes in one transaction and one journal flush (a folder of an import):
        all of them land, or none. A cell's writes in a run stay one transaction each."""
        self._batched = []
        try:
            with self.transaction():
                yield
                if self._journal is not None and self._batched:
                    self._journal.append(*self._batched)
        except sqlite3.Error as exc:
            raise sqlite_problem(exc, self.path) from None
        except OSError as exc:
            raise os_problem(exc, self.path) from None
        finally:
            self._batched = None

    # --- meta and runs ------------------------------------------------------------------------

    @_guarded
    def meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    @_guarded
    def meta_items(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in self._db.execute("SELECT key, value FROM meta")}

    @_guarded
    def set_meta(self, key: str, value: str) -> None:
        if key != "schema_version":
            self._log({"type": "meta", "key": key, "value": value})
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    @_guarded
    def begin_run(
        self,
        spec_digest: str,
        provenance: dict[str, Any],
        *,
        run_id: int | None = None,
        started_at: str | None = None,
    ) -> int:
        """A new run (or, rebuilding, a journaled one with its id and start)."""
        started_at = started_at or now()
        if run_id is None:
            found = self._db.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM runs").fetchone()
            run_id = int(found[0])
        self._log(
            {
                "type": "run",
                "id": run_id,
                "started_at": started_at,
                "spec_digest": spec_digest,
                "provenance": provenance,
            }
        )
        said = json.dumps(provenance, sort_keys=True)
        self._db.execute(
            "INSERT INTO runs (id, started_at, status, spec_digest, provenance)"
            " VALUES (?, ?, ?, ?, ?)",
            (run_id, started_at, RunStatus.RUNNING, spec_digest, said),
        )
        return run_id

    @_guarded
    def finish_run(self, run_id: int, status: RunStatus, *, finished_at: str | None = None) -> None:
        finished_at = finished_at or now()
        self._log({"type": "run_end", "id": run_id, "status": status, "finished_at": finished_at})
        self._db.execute(
            "UPDATE runs SET finished_at = ?, status = ? WHERE id = ?",
            (finished_at, status, run_id),
        )

    @_guarded
    def end_stale_runs(self) -> None:
        """Runs still marked running whose process is gone (the caller holds the lock)."""
        for (run_id,) in self._db.execute(
            "SELECT id FROM runs WHERE status = 'running'"
        ).fetchall():
            self.finish_run(run_id, RunStatus.INTERRUPTED)

    @_guarded
    def runs(self) -> list[RunRow]:
        return [RunRow.of(row) for row in self._query("SELECT * FROM runs ORDER BY id")]

    # --- engines and variables ----------------------------------------------------------------

    @_guarded
    def record_engine(self, name: str, **fields: Any) -> None:
        self._log({"type": "engine", "name": name, "fields": fields})
        columns = ["name", *fields]
        values = [name, *(json.dumps(v) if isinstance(v, dict) else v for v in fields.values())]
        updates = ", ".join(f"{c} = excluded.{c}" for c in fields)
        self._db.execute(
            f"INSERT INTO engines ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
            f" ON CONFLICT(name) DO UPDATE SET {updates}",
            values,
        )

    @_guarded
    def engines(self) -> dict[str, EngineRow]:
        return {row["name"]: EngineRow.of(row) for row in self._query("SELECT * FROM engines")}

    @_guarded
    def record_variables(
        self, engine: str, tier: str, workload: str, values: dict[str, str]
    ) -> None:
        self._log(
            {
                "type": "variables",
                "engine": engine,
                "tier": tier,
                "workload": workload,
                "values": values,
            }
        )
        with self.transaction() as db:
            db.execute(
                "DELETE FROM variables WHERE engine = ? AND tier = ? AND workload = ?",
                (engine, tier, workload),
            )
            db.executemany(
                "INSERT INTO variables VALUES (?, ?, ?, ?, ?)",
                [(engine, tier, workload, name, value) for name, value in values.items()],
            )

    @_guarded
    def variables(self) -> dict[tuple[str, str, str], dict[str, str]]:
        found: dict[tuple[str, str, str], dict[str, str]] = {}
        for engine, tier, workload, name, value in self._db.execute("SELECT * FROM variables"):
            found.setdefault((str(engine), str(tier), str(workload)), {})[str(name)] = str(value)
        return found

    # --- cells --------------------------------------------------------------------------------

    @_guarded
    def definitions(self) -> dict[Cell, str]:
        """Every registered cell and its definition digest."""
        return {row.cell: row.definition for row in self.cells()}

    @_guarded
    def register(self, cells: Iterable[tuple[Cell, str]]) -> None:
        found = [
            (c, (c.engine, c.tier, c.workload, c.network, c.threads, c.repetition, d, c.rate))
            for c, d in cells
        ]
        self._log({"type": "cells", "cells": [list(row) for _, row in found]})
        with self.transaction() as db:
            db.executemany(
                "INSERT OR IGNORE INTO cells (engine, tier, workload, network, threads, repetition,"
                " definition, rate, key, scenario, status)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
                [(*row, c.key, c.scenario.name) for c, row in found],
            )

    @_guarded
    def requeue(self, *, failed_too: bool) -> int:
        """Cells a killed run left running (and failed ones, if asked) go back to pending."""
        states = (Status.RUNNING, Status.FAILED) if failed_too else (Status.RUNNING,)
        if failed_too:
            self._log({"type": "requeue_failed"})
        marks = ", ".join("?" * len(states))
        with self.transaction() as db:
            for table in CELL_RESULT_TABLES:
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

    @_guarded
    def status_of(self) -> dict[str, str]:
        return {str(k): str(s) for k, s in self._db.execute("SELECT key, status FROM cells")}

    @_guarded
    def mark_running(self, cell: Cell, run_id: int, *, started_at: str | None = None) -> None:
        """The cell's measurement begins, in this run (which says on what machine)."""
        started_at = started_at or now()
        self._log({"type": "running", "key": cell.key, "run": run_id, "started_at": started_at})
        self._db.execute(
            "UPDATE cells SET status = 'running', run_id = ?, started_at = ?, finished_at = NULL,"
            " attempts = attempts + 1 WHERE key = ?",
            (run_id, started_at, cell.key),
        )

    @contextmanager
    def recording(self, cell: Cell) -> Iterator[CellRecording]:
        """One cell's result in one transaction: its samples as they come (an import streams
        them from a file of any size), then the rest (`CellRecording.finish`)."""
        try:
            with self.transaction() as db:
                cell_id = self._cell_id(cell)
                for table in CELL_RESULT_TABLES:
                    db.execute(f"DELETE FROM {table} WHERE cell_id = ?", (cell_id,))
                recording = CellRecording(self._log, db, cell, cell_id)
                yield recording
                if not recording.finished:
                    raise AssertionError(f"cell {cell.key}: recording not finished")
        except sqlite3.Error as exc:
            raise sqlite_problem(exc, self.path) from None
        except OSError as exc:
            raise os_problem(exc, self.path) from None

    def record_result(self, cell: Cell, outcome: CellOutcome) -> None:
        """A measured cell in one transaction: done with its summary, or failed with a reason
        (its per-second samples and telemetry kept either way: a truncated run's timeline)."""
        with self.recording(cell) as recording:
            recording.samples([outcome.samples])
            recording.finish(outcome)

    @_guarded
    def supersede(self, cell: Cell, why: str) -> None:
        """The cell's result is kept aside (figures, flags, raw files) and the cell goes back
        to pending, to be measured again."""
        self._log({"type": "superseded", "key": cell.key, "why": why})
        with self.transaction() as db:
            cell_id = self._cell_id(cell)
            db.execute(
                "INSERT INTO superseded (cell_id, finished_at, artifact, flags, notes, tps,"
                " total_time_s, why) SELECT c.id, c.finished_at, c.artifact, c.flags, c.notes,"
                " s.tps, s.total_time_s, ? FROM cells c LEFT JOIN summaries s ON s.cell_id = c.id"
                " WHERE c.id = ?",
                (why, cell_id),
            )
            for table in CELL_RESULT_TABLES:
                db.execute(f"DELETE FROM {table} WHERE cell_id = ?", (cell_id,))
            db.execute(
                "UPDATE cells SET status = 'pending', reason = NULL WHERE id = ?", (cell_id,)
            )

    def superseded(self) -> dict[str, list[SupersededRow]]:
        """Each cell's earlier results, oldest first."""
        found: dict[str, list[SupersededRow]] = {}
        for row in self._query(
            "SELECT c.key, x.* FROM superseded x JOIN cells c ON c.id = x.cell_id ORDER BY x.id"
        ):
            found.setdefault(str(row["key"]), []).append(SupersededRow.of(row))
        return found

    @_guarded
    def redefine(self, cell: Cell, definition: str) -> None:
        self._log({"type": "redefine", "key": cell.key, "definition": definition})
        self._db.execute("UPDATE cells SET definition = ? WHERE key = ?", (definition, cell.key))

    @_guarded
    def record_failed(
        self, cell: Cell, reason: str, artifact: str | None, *, finished_at: str | None = None
    ) -> None:
        finished_at = finished_at or now()
        self._log(
            {
                "type": "failed",
                "key": cell.key,
                "reason": reason,
                "artifact": artifact,
                "finished_at": finished_at,
            }
        )
        self._db.execute(
            "UPDATE cells SET status = 'failed', reason = ?, finished_at = ?, artifact = ?"
            " WHERE key = ?",
            (reason, finished_at, artifact, cell.key),
        )

    def _cell_id(self, cell: Cell) -> int:
        row = self._db.execute("SELECT id FROM cells WHERE key = ?", (cell.key,)).fetchone()
        if row is None:
            raise KeyError(cell.key)
        return int(row[0])

    @_guarded
    def machines(self) -> dict[str, str]:
        """Which machine measured each cell: a merged ledger says it (meta cell_machines);
        otherwise the provenance of the run that measured it does."""
        if (said := self.meta("cell_machines")) is not None:
            return {str(k): str(v) for k, v in json.loads(said).items()}
        by_run = {}
        for run in self.runs():
            host = run.provenance.get("host", {})
            by_run[run.id] = str(run.provenance.get("machine") or host.get("hostname") or "")
        # A cell whose run is not known (rebuilt from a journal older than the `running`
        # records) was measured where every run was, when that is one machine.
        machines = set(by_run.values())
        alone = machines.pop() if len(machines) == 1 else ""
        return {
            str(row["key"]): by_run.get(row["run_id"], alone)
            for row in self._query("SELECT key, run_id FROM cells")
        }


def _build(path: Path) -> None:
    """A new ledger, built beside its place and linked into it whole: a reader (status of
    a shard whose pod is just starting) finds either no ledger or one with its schema,
    never a file still being made. Of two writers building at once, the first one's
    stays."""
    building = path.with_name(f".{path.name}.{os.getpid()}.building")
    try:
        db = sqlite3.connect(building, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.executescript(SCHEMA)
            db.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
        finally:
            db.close()
        os.link(building, path)
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    except FileExistsError:
        pass
    except sqlite3.Error as exc:
        raise sqlite_problem(exc, path) from None
    except OSError as exc:
        raise os_problem(exc, path) from None
    finally:
        building.unlink(missing_ok=True)
