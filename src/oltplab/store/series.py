"""Per-second samples as the ledger keeps them: each cell's columns as arrays of 8-byte
floats (little-endian), in chunks of a fixed number of seconds.

A series is always read whole, so one row per chunk stores it in a fraction of the space
of a row per second and reads it back with one query; chunks keep the memory an import
needs flat however long the run was.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator

import numpy as np

from oltplab.sysbench.output import SAMPLE_COLUMNS

CHUNK_SECONDS = 4096
_LITTLE = np.dtype("<f8")
INSERT = f"INSERT INTO samples VALUES (?, ?{', ?' * len(SAMPLE_COLUMNS)})"


def chunk_rows(cell_id: int, blocks: Iterable[np.ndarray]) -> Iterator[tuple[object, ...]]:
    """(cell_id, chunk, one blob per column) rows, a chunk at a time as blocks of samples
    come; a block has one row per second, its columns in SAMPLE_COLUMNS order."""
    held: list[np.ndarray] = []
    count = chunk = 0
    for block in blocks:
        held.append(block)
        count += len(block)
        while count >= CHUNK_SECONDS:
            together = np.concatenate(held)
            yield _row(cell_id, chunk, together[:CHUNK_SECONDS])
            held, count, chunk = [together[CHUNK_SECONDS:]], count - CHUNK_SECONDS, chunk + 1
    if count:
        yield _row(cell_id, chunk, np.concatenate(held))


def _row(cell_id: int, chunk: int, samples: np.ndarray) -> tuple[object, ...]:
    columns = np.ascontiguousarray(samples.T, dtype=_LITTLE)
    return (cell_id, chunk, *(column.tobytes() for column in columns))


def decode(blob: object) -> np.ndarray | None:
    """The floats of a column blob; None when it is not one (a damaged or edited row)."""
    if not isinstance(blob, bytes) or len(blob) % 8:
        return None
    return np.frombuffer(blob, dtype=_LITTLE).astype(np.float64)


def rows_to_chunks(db: sqlite3.Connection) -> None:
    """Schema 4 -> 5: a row per second becomes a row per chunk of seconds."""
    shape = [row[1] for row in db.execute("PRAGMA table_info(samples)")]
    if "chunk" in shape:
        return  # made by this schema already (a ledger older than the samples table)
    db.execute("ALTER TABLE samples RENAME TO samples_by_second")
    db.execute(CHUNKED_SAMPLES)
    cells = [row[0] for row in db.execute("SELECT DISTINCT cell_id FROM samples_by_second")]
    names = ", ".join(SAMPLE_COLUMNS)
    for cell_id in cells:
        found = db.execute(
            f"SELECT {names} FROM samples_by_second WHERE cell_id = ? ORDER BY second", (cell_id,)
        )
        rows = [[0.0 if v is None else v for v in row] for row in found]
        db.executemany(INSERT, chunk_rows(cell_id, [np.array(rows, dtype=np.float64)]))
    db.execute("DROP TABLE samples_by_second")


CHUNKED_SAMPLES = f"""
CREATE TABLE IF NOT EXISTS samples (
    cell_id INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
    chunk INTEGER NOT NULL,
    {", ".join(f"{name} BLOB NOT NULL" for name in SAMPLE_COLUMNS)},
    PRIMARY KEY (cell_id, chunk)
) WITHOUT ROWID"""
