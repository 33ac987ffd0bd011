"""A ledger rebuilt from the journal and the raw files, and what a damaged one still holds.

`rebuild` replays every journaled write into a new ledger, in a scratch folder; the
per-second samples come from each cell's sysbench output and the telemetry series from
its collectors' files, read again on the clock the journal kept. Only when the new ledger
is complete is the old one set aside (`ledger.sqlite.damaged-<time>`) and the new one put
in its place, so a rebuild that fails leaves everything as it was.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from oltplab.base import nofollow
from oltplab.base.errors import OltplabError
from oltplab.base.telling import Note, Said, Told
from oltplab.plan import Cell
from oltplab.store.directory import (
    JOURNAL,
    LEDGER,
    REBUILD_SCRATCH,
    ResultsDir,
    check_results,
    damaged,
    stem_of,
)
from oltplab.store.integrity import (
    CELL_COLUMNS,
    STATUSES,
    SUMMARY_COLUMNS,
    check_file,
    sqlite_problem,
    wrong_value,
)
from oltplab.store.journal import Journal, Record
from oltplab.store.ledger import Ledger
from oltplab.store.lock import ResultsLock
from oltplab.store.outcome import CellOutcome
from oltplab.store.provenance import load_run_json
from oltplab.store.schema import SCHEMA_VERSION
from oltplab.sysbench.output import NO_SAMPLES, Summary, SysbenchOutput
from oltplab.sysbench.reading import read_output
from oltplab.sysbench.transactions import KindResults
from oltplab.telemetry.collectors import TelemetryClock
from oltplab.telemetry.registry import telemetry_rows
from oltplab.workloads.kind import WorkloadKind
from oltplab.workloads.kinds import kind_named


@dataclass
class Rebuilt:
    ledger: Path
    set_aside: Path | None = None
    cells: dict[str, int] = field(default_factory=dict)
    series_read: int = 0  # cells whose per-second samples came back from their raw output
    lost: list[str] = field(default_factory=list)  # what the raw files could not give back
    torn_lines: int = 0

    def told(self) -> Told:
        counts = ", ".join(f"{n} {state}" for state, n in self.cells.items() if n)
        said: list[Said] = [
            f"{self.ledger}: rebuilt ({counts or 'no cells'})",
            f"  per-second samples read back for {self.series_read} cell(s)",
        ]
        if self.set_aside:
            said.append(f"  the old ledger is kept as {self.set_aside}")
        if self.torn_lines:
            said.append(f"  {self.torn_lines} journal line(s) cut short by a kill were skipped")
        said += [Note(f"not rebuilt: {lost}") for lost in self.lost]
        return Told(tuple(said), f"oltplab status {self.ledger.parent}")


def summary_from_columns(values: dict[str, Any]) -> Summary:
    """A summary as the ledger stores it (rates, not totals), for a cell whose raw output is
    gone: the totals are the rates times the run's length."""
    seconds = float(values["total_time_s"] or 0)
    return Summary(
        reads=round((values["reads_per_s"] or 0) * seconds),
        writes=round((values["writes_per_s"] or 0) * seconds),
        other=round((values["other_per_s"] or 0) * seconds),
        **{  # type: ignore[arg-type]  # each column holds its field's type or NULL
            column: values.get(column)
            for column in SUMMARY_COLUMNS
            if column not in ("reads_per_s", "writes_per_s", "other_per_s")
        },
    )


def raw_output(results: Path, artifact: str | None) -> SysbenchOutput | None:
    if not artifact:
        return None
    path = Path(artifact) if Path(artifact).is_absolute() else results / artifact
    try:
        return read_output(path)
    except OSError:
        return None


def workload_kinds(results: Path) -> dict[str, WorkloadKind]:
    """The kind of each workload other than sbtest, as run.json says, for the figures a
    kind reads from its cells' raw output."""
    try:
        facts = load_run_json(ResultsDir(results).run_json).workloads
    except (OSError, OltplabError):
        return {}
    return {name: kind_named(fact["kind"]) for name, fact in facts.items() if "kind" in fact}


class _Replay:
    def __init__(self, results: Path, ledger: Ledger, report: Rebuilt) -> None:
        self.results = results
        self.ledger = ledger
        self.report = report
        self.cells: dict[str, Cell] = {}
        self.kinds = workload_kinds(results)

    def apply(self, record: Record) -> None:
        kind = record["type"]
        ledger = self.ledger
        if kind == "meta":
            ledger.set_meta(record["key"], record["value"])
        elif kind == "run":
            ledger.begin_run(
                record["spec_digest"],
                record["provenance"],
                run_id=record["id"],
                started_at=record["started_at"],
            )
        elif kind == "run_end":
            ledger.finish_run(record["id"], record["status"], finished_at=record["finished_at"])
        elif kind == "engine":
            ledger.record_engine(record["name"], **record["fields"])
        elif kind == "variables":
            ledger.record_variables(
                record["engine"], record["tier"], record["workload"], record["values"]
            )
        elif kind == "cells":
            found = []
            for engine, tier, workload, where, threads, repetition, definition, *rate in record[
                "cells"
            ]:
                # Journals before ledger schema 6 hold the scenario's name where this is;
                # before schema 8 they had no rate (every cell closed loop).
                network = where if isinstance(where, bool) else where.endswith("-network")
                cell = Cell(engine, tier, workload, threads, repetition, network, *rate)
                self.cells[cell.key] = cell
                found.append((cell, definition))
            ledger.register(found)
        elif kind == "redefine":
            ledger.redefine(self.cells[record["key"]], record["definition"])
        elif kind == "running":
            ledger.mark_running(
                self.cells[record["key"]], record["run"], started_at=record["started_at"]
            )
        elif kind == "requeue_failed":
            ledger.requeue(failed_too=True)
        elif kind == "failed":
            ledger.record_failed(
                self.cells[record["key"]],
                record["reason"],
                record["artifact"],
                finished_at=record["finished_at"],
            )
        elif kind == "result":
            self._result(record)
        elif kind == "superseded":
            ledger.supersede(self.cells[record["key"]], record["why"])

    def _result(self, record: Record) -> None:
        cell = self.cells[record["key"]]
        output = raw_output(self.results, record["artifact"])
        if output is not None:
            self.report.series_read += 1
        elif record["artifact"]:
            self.report.lost.append(f"{cell.key}: per-second samples ({record['artifact']})")
        summary = output.summary if output is not None else None
        if summary is None and record["summary"] is not None:
            summary = summary_from_columns(record["summary"])
        rows: list[tuple[str, str, int, float]] = []
        if record["clock"] and record["artifact"]:
            clock = TelemetryClock(
                **{**record["clock"], "sources": tuple(record["clock"]["sources"])}
            )
            stem = stem_of(self.results / record["artifact"])
            try:
                rows = telemetry_rows(stem, clock)
            except OSError:
                self.report.lost.append(f"{cell.key}: telemetry series")
        outcome = CellOutcome(
            summary,
            tuple(record["flags"]),
            record["artifact"],
            record["reason"],
            record["notes"],
            output.samples if output is not None else NO_SAMPLES,
            tuple(rows),
            clock=record["clock"],
            finished_at=record["finished_at"],
            histogram=tuple(output.histogram) if output is not None else (),
            ignored_errors=tuple(output.ignored_errors) if output is not None else (),
            kind_results=self._kind_results(cell, record["artifact"]),
        )
        self.ledger.record_result(cell, outcome)

    def _kind_results(self, cell: Cell, artifact: str | None) -> KindResults | None:
        kind = self.kinds.get(cell.workload)
        if kind is None or not artifact:
            return None
        try:
            return kind.results(nofollow.read_text(self.results / artifact))
        except OSError:
            self.report.lost.append(f"{cell.key}: its workload kind's figures ({artifact})")
            return None


def rebuild(results: Path) -> Rebuilt:
    """A new ledger from the journal and the raw files, holding the directory as a run
    does."""
    if not results.is_dir():
        raise OltplabError(f"{results}: no such results folder")
    with ResultsLock(results):
        return _rebuilt(results)


def _rebuilt(results: Path) -> Rebuilt:
    journal = Journal(results)
    if not journal.exists():
        raise OltplabError(
            f"{results}: no {JOURNAL} to rebuild from (results written before oltplab kept "
            "a journal); run or import them again into a new --results folder"
        )
    read = journal.read()
    header = read.records[0] if read.records else {}
    # Journals of schemas 6 and 7 lack summaries' interval_s (read as unknown) and cells'
    # rate (closed loop); their records are otherwise the same.
    if header.get("type") != "journal" or header.get("schema") not in (6, 7, SCHEMA_VERSION):
        raise OltplabError(
            f"{journal.path}: written for ledger schema {header.get('schema', '?')}, this "
            f"oltplab writes {SCHEMA_VERSION}; rebuild with the oltplab that wrote it"
        )
    scratch = Path(tempfile.mkdtemp(prefix=REBUILD_SCRATCH, dir=results))
    try:
        report = Rebuilt(ResultsDir(results).ledger, torn_lines=read.torn_lines)
        ledger = Ledger.open(scratch, journal=False)
        try:
            replay = _Replay(results, ledger, report)
            for record in read.records[1:]:
                replay.apply(record)
            report.cells = ledger.counts()
        finally:
            ledger.close()
        report.set_aside = _set_aside(results)
        ResultsDir(scratch).ledger.rename(ResultsDir(results).ledger)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return report


def _set_aside(results: Path) -> Path | None:
    """The old ledger (with its WAL files) renamed out of the way, kept for inspection."""
    old = ResultsDir(results).ledger
    if not old.exists():
        return None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    kept = damaged(old, stamp)
    for part in ResultsDir(results).ledger_files:
        if part.exists():
            part.rename(kept.with_name(part.name.replace(LEDGER, kept.name, 1)))
    return kept


# --- salvage ----------------------------------------------------------------------------------


@dataclass
class Salvaged:
    rows: list[dict[str, Any]]
    problems: list[str]


def salvage(results: Path) -> Salvaged:
    """Every cell row a damaged ledger still gives: each table read on its own, row by row
    through its rowid (no index, no join), so a damaged page loses only the rows on it.
    Values of the wrong type are left empty, and each problem is listed."""
    path = ResultsDir(results).ledger
    check_results(results)
    check_file(path)
    found = Salvaged([], [])
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise sqlite_problem(exc, path) from None
    db.row_factory = sqlite3.Row
    try:
        cells = _surviving_rows(db, "cells", found.problems)
        if not cells and found.problems:
            raise sqlite_problem(sqlite3.DatabaseError(found.problems[-1]), path)
        summaries = _surviving_rows(db, "summaries", found.problems)
        engines = {
            row["name"]: row for row in _surviving_rows(db, "engines", found.problems).values()
        }
        for cell_id, cell in cells.items():
            values = (
                {**dict(summaries[cell_id]), **dict(cell)}
                if cell_id in summaries
                else {**dict(cell)}
            )
            engine = engines.get(values.get("engine"))
            values["family"] = engine["family"] if engine is not None else None
            values["version"] = engine["version"] if engine is not None else None
            found.rows.append(_salvaged_row(values, found.problems))
    finally:
        db.close()
    return found


def _surviving_rows(
    db: sqlite3.Connection, table: str, problems: list[str]
) -> dict[int, sqlite3.Row]:
    """The rows of `table` that can still be read, by rowid; a table whose root page is
    gone gives none, and says so."""
    try:
        last = int(db.execute(f"SELECT MAX(rowid) FROM {table}").fetchone()[0] or 0)
    except sqlite3.Error as exc:
        problems.append(f"table {table}: unreadable ({exc})")
        return {}
    rows: dict[int, sqlite3.Row] = {}
    lost = 0
    for rowid in range(1, last + 1):
        try:
            row = db.execute(f"SELECT * FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
        except sqlite3.Error:
            lost += 1
            continue
        if row is not None:
            rows[rowid] = row
    if lost:
        problems.append(f"table {table}: {lost} row(s) on damaged pages")
    return rows


def _salvaged_row(values: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    for column, (kind, nullable) in CELL_COLUMNS.items():
        if column in values and wrong_value(values[column], kind, nullable):
            problems.append(f"cell {values.get('key')!r}: {column} held {values[column]!r}")
            values[column] = None
    if values.get("status") not in STATUSES:
        values["status"] = None
    return values
