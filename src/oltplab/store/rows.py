"""A cell as the ledger hands it out: typed fields, read from its row once, here."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field, fields
from typing import Any

from oltplab.plan import Cell
from oltplab.store.integrity import SUMMARY_COLUMNS
from oltplab.store.status import Status

Figure = float | int | None
# What CellRow.of reads: a cell, its summary (if measured) and its engine's identity.
CELLS_QUERY = (
    "SELECT c.*, s.*, e.family, e.version, e.server_version FROM cells c"
    " LEFT JOIN summaries s ON s.cell_id = c.id"
    " LEFT JOIN engines e ON e.name = c.engine ORDER BY c.id"
)


@dataclass(frozen=True)
class CellRow:
    """One cell of the matrix: where it stands, what sysbench printed for it (`figures`,
    by the summary's column names; empty until measured) and its engine's identity."""

    key: str
    engine: str
    tier: str
    workload: str
    scenario: str
    network: bool
    rate: int
    threads: int
    repetition: int
    definition: str
    status: Status
    reason: str | None
    attempts: int
    run_id: int | None
    started_at: str | None
    finished_at: str | None
    artifact: str | None
    flags: tuple[str, ...]
    notes: str
    family: str | None = None
    version: str | None = None
    server_version: str | None = None
    figures: dict[str, Figure] = field(default_factory=dict)

    @property
    def cell(self) -> Cell:
        return Cell(
            self.engine, self.tier, self.workload, self.threads, self.repetition,
            self.network, self.rate,
        )  # fmt: skip

    def figure(self, name: str) -> float | None:
        """What sysbench printed under the summary column `name`; None when it did not."""
        value = self.figures.get(name)
        return None if value is None else float(value)

    @property
    def tps(self) -> float | None:
        return self.figure("tps")

    @property
    def percentile(self) -> int | None:
        """The latency percentile the run asked sysbench for."""
        value = self.figures.get("percentile")
        return None if value is None else int(value)

    @property
    def error_rate(self) -> float | None:
        """Ignored errors per transaction."""
        errors, transactions = self.figures.get("errors"), self.figures.get("transactions")
        return errors / transactions if errors is not None and transactions else None

    @property
    def finished(self) -> bool:
        """Measured, or failed with a reason: no longer pending or running."""
        return self.status in (Status.DONE, Status.FAILED)

    @classmethod
    def of(cls, row: sqlite3.Row) -> CellRow:
        """A row of CELLS_QUERY (its columns checked by integrity.check_cell_row)."""
        columns = row.keys()
        measured = "cell_id" in columns and row["cell_id"] is not None
        return cls(
            key=row["key"],
            engine=row["engine"],
            tier=row["tier"],
            workload=row["workload"],
            scenario=row["scenario"],
            network=bool(row["network"]),
            rate=int(row["rate"]),
            threads=int(row["threads"]),
            repetition=int(row["repetition"]),
            definition=row["definition"],
            status=Status(row["status"]),
            reason=row["reason"],
            attempts=int(row["attempts"]),
            run_id=row["run_id"],
            started_at=row["started_at"],
            finished_at=row["finished_at"],
            artifact=row["artifact"],
            flags=tuple(f for f in row["flags"].split(",") if f),
            notes=row["notes"],
            family=row["family"] if "family" in columns else None,
            version=row["version"] if "version" in columns else None,
            server_version=row["server_version"] if "server_version" in columns else None,
            figures={c: row[c] for c in SUMMARY_COLUMNS if c in columns} if measured else {},
        )


@dataclass(frozen=True)
class RunRow:
    """One `oltplab run` into the results directory: when, how it ended, and where."""

    id: int
    started_at: str
    finished_at: str | None
    status: str  # a RunStatus, or what an older oltplab wrote
    spec_digest: str
    provenance: dict[str, Any]

    @classmethod
    def of(cls, row: sqlite3.Row) -> RunRow:
        return cls(
            int(row["id"]), row["started_at"], row["finished_at"], row["status"],
            row["spec_digest"], json.loads(row["provenance"]),
        )  # fmt: skip


@dataclass(frozen=True)
class EngineRow:
    """An engine as the run that set it up recorded it."""

    name: str
    family: str
    version: str
    server_version: str | None
    source: str  # the spec's source table, as JSON
    binary_sha256: str | None
    archive_sha256: str | None
    artifact_dir: str | None

    @classmethod
    def of(cls, row: sqlite3.Row) -> EngineRow:
        return cls(**{f.name: row[f.name] for f in fields(cls)})


@dataclass(frozen=True)
class SupersededRow:
    """A result a cell had before it was measured again, and why it was."""

    finished_at: str | None
    artifact: str | None
    flags: tuple[str, ...]
    notes: str
    tps: float | None
    total_time_s: float | None
    why: str

    @classmethod
    def of(cls, row: sqlite3.Row) -> SupersededRow:
        return cls(
            row["finished_at"], row["artifact"], tuple(f for f in row["flags"].split(",") if f),
            row["notes"], row["tps"], row["total_time_s"], row["why"],
        )  # fmt: skip
