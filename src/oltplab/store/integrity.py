"""How a ledger is trusted: a damaged file, a truncated one, or a value of the wrong type
is told in one line with the way to recover, never read as if it were data."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from oltplab.base.errors import EnvironmentProblem, LedgerDamaged, OltplabError
from oltplab.store.files import disk_full, free_bytes
from oltplab.store.status import Status

SQLITE_MAGIC = b"SQLite format 3\x00"
# Below this, an I/O error while writing is taken for a full disk.
LOW_SPACE_BYTES = 8 * 1024**2


def recovery(results: Path) -> str:
    return (
        f"rebuild it from the journal and the raw files with `oltplab rebuild {results}` (the "
        f"damaged file is kept beside it), or save what can still be read with "
        f"`oltplab export {results} --salvage`"
    )


def damaged(path: Path, what: str) -> LedgerDamaged:
    return LedgerDamaged(f"{path} is damaged ({what}); {recovery(path.parent)}")


def check_file(path: Path) -> None:
    """An existing ledger must at least look like one: a file cut to nothing, or whose
    first page is gone, would otherwise open as a new, empty ledger."""
    try:
        with path.open("rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except IsADirectoryError:
        raise OltplabError(f"{path}: is a folder, not a ledger") from None
    if not head:
        raise damaged(path, "the file is empty")
    if head != SQLITE_MAGIC:
        raise damaged(path, "not an SQLite file: its header is gone")


def sqlite_problem(exc: sqlite3.Error, path: Path) -> OltplabError:
    """One line for an SQLite error: a full disk, damage, permissions, or another I/O error."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    said = str(exc)
    if primary == sqlite3.SQLITE_FULL or (
        primary == sqlite3.SQLITE_IOERR and free_bytes(path) < LOW_SPACE_BYTES
    ):
        return disk_full(path)
    if primary in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) or "malformed" in said:
        return damaged(path, said)
    if primary in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM):
        return EnvironmentProblem(f"{path}: {said}; check the permissions of it and its folder")
    if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return EnvironmentProblem(f"{path}: busy for too long ({said}); try again")
    return EnvironmentProblem(f"{path}: {said}")


TEXT, INTEGER, NUMBER = "text", "a whole number", "a number"
_PYTHON_TYPES = {TEXT: (str,), INTEGER: (int,), NUMBER: (int, float)}


def wrong_value(value: object, kind: str, nullable: bool) -> bool:
    if value is None:
        return not nullable
    return isinstance(value, bool) or not isinstance(value, _PYTHON_TYPES[kind])


SUMMARY_COLUMNS = (
    "tps", "qps", "reads_per_s", "writes_per_s", "other_per_s", "transactions", "queries",
    "errors", "errors_per_s", "reconnects", "reconnects_per_s", "lat_min_ms", "lat_avg_ms",
    "lat_max_ms", "lat_pct_ms", "percentile", "total_time_s", "events", "interval_s",
)  # fmt: skip
SUMMARY_INTEGERS = frozenset(
    {"transactions", "queries", "errors", "reconnects", "percentile", "events"}
)


# What every column read back from the ledger must hold (kind, may be NULL).
CELL_COLUMNS: dict[str, tuple[str, bool]] = {
    "key": (TEXT, False),
    "engine": (TEXT, False),
    "tier": (TEXT, False),
    "workload": (TEXT, False),
    "scenario": (TEXT, False),
    "network": (INTEGER, False),
    "rate": (INTEGER, False),
    "threads": (INTEGER, False),
    "repetition": (INTEGER, False),
    "definition": (TEXT, False),
    "status": (TEXT, False),
    "reason": (TEXT, True),
    "attempts": (INTEGER, False),
    "artifact": (TEXT, True),
    "flags": (TEXT, False),
    "notes": (TEXT, False),
    "started_at": (TEXT, True),
    "finished_at": (TEXT, True),
    **{
        column: (INTEGER if column in SUMMARY_INTEGERS else NUMBER, True)
        for column in SUMMARY_COLUMNS
    },
}
STATUSES = tuple(Status)


def value_problem(path: Path, where: str, column: str, value: object, kind: str) -> LedgerDamaged:
    return damaged(path, f"{where}: {column} holds {value!r} where {kind} belongs")


def check_cell_row(path: Path, row: sqlite3.Row) -> sqlite3.Row:
    """The row, once every column holds what the result model says it holds."""
    columns = row.keys()
    where = f"cell {row['key']!r}" if "key" in columns else "a cell"
    for column, (kind, nullable) in CELL_COLUMNS.items():
        if column in columns and wrong_value(row[column], kind, nullable):
            raise value_problem(path, where, column, row[column], kind)
    if row["status"] not in STATUSES:
        raise value_problem(path, where, "status", row["status"], " or ".join(STATUSES))
    return row


_SQLITE_TYPES = {TEXT: "'text'", INTEGER: "'integer'", NUMBER: "'integer', 'real'"}


def wrong_type_query() -> str:
    """The first cell whose row or summary holds a value of the wrong type, if any: a
    writer checks this at open, as readers check every row they read."""
    checks = []
    for column, (kind, nullable) in CELL_COLUMNS.items():
        allowed = _SQLITE_TYPES[kind] + (", 'null'" if nullable else "")
        table = "s" if column in SUMMARY_COLUMNS else "c"
        checks.append(
            f"SELECT c.key, '{column}', {table}.{column}, '{kind}' FROM cells c"
            f" LEFT JOIN summaries s ON s.cell_id = c.id"
            f" WHERE typeof({table}.{column}) NOT IN ({allowed})"
            + (" AND s.cell_id IS NOT NULL" if table == "s" else "")
        )
    return " UNION ALL ".join(checks) + " LIMIT 1"
