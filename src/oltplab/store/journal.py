"""The journal: every write to the ledger, as one JSON line appended and flushed to disk
before the ledger's own transaction.

It holds what the ledger holds except the bulk that the raw files keep (per-second
samples, telemetry series), so a damaged ledger can be rebuilt from the journal and the
raw files (`oltplab rebuild`). A line cut short by a kill is skipped when read; the next
append starts on a fresh line.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from oltplab.base.nesting import load_json
from oltplab.store.directory import ResultsDir
from oltplab.store.integrity import SUMMARY_COLUMNS

Record = dict[str, Any]


@dataclass
class JournalRead:
    records: list[Record]
    torn_lines: int  # lines a kill cut short; their writes never reached the ledger either


class Journal:
    def __init__(self, results: Path) -> None:
        self.path = ResultsDir(results).journal

    def exists(self) -> bool:
        return self.path.is_file() and self.path.stat().st_size > 0

    def append(self, *records: Record) -> None:
        data = "".join(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n" for r in records)
        with self.path.open("a+b") as handle:
            if handle.tell() > 0:
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":
                    handle.write(b"\n")
            handle.write(data.encode())
            handle.flush()
            os.fsync(handle.fileno())

    def _lines(self) -> Iterator[bytes]:
        with self.path.open("rb") as handle:
            yield from handle

    def read(self) -> JournalRead:
        records, torn = [], 0
        for line in self._lines():
            try:
                record = load_json(line)
            except ValueError:
                torn += 1
                continue
            if isinstance(record, dict) and "type" in record:
                records.append(record)
            else:
                torn += 1
        return JournalRead(records, torn)


class LedgerContent(Protocol):
    """What a journal is seeded from: a ledger's reading side."""

    def meta_items(self) -> dict[str, str]: ...
    def runs(self) -> list[Any]: ...
    def engines(self) -> dict[str, Any]: ...
    def variables(self) -> dict[tuple[str, str, str], dict[str, str]]: ...
    def cell_rows(self) -> list[Any]: ...


def summary_columns(row: Any) -> dict[str, Any] | None:
    if row["tps"] is None:
        return None
    return {column: row[column] for column in SUMMARY_COLUMNS}


def ledger_records(ledger: LedgerContent) -> list[Record]:
    """A ledger written before journals were kept, as the journal that would have led to
    it (per-second series excepted: the raw files hold those)."""
    records: list[Record] = [
        {"type": "meta", "key": key, "value": value}
        for key, value in ledger.meta_items().items()
        if key != "schema_version"
    ]
    for run in ledger.runs():
        records.append(
            {
                "type": "run",
                "id": run.id,
                "started_at": run.started_at,
                "spec_digest": run.spec_digest,
                "provenance": run.provenance,
            }
        )
        if run.finished_at:
            records.append(
                {
                    "type": "run_end",
                    "id": run.id,
                    "status": run.status,
                    "finished_at": run.finished_at,
                }
            )
    for name, row in ledger.engines().items():
        fields = dataclasses.asdict(row)
        del fields["name"]
        fields["source"] = json.loads(fields["source"])
        records.append({"type": "engine", "name": name, "fields": fields})
    for (engine, tier, workload), values in ledger.variables().items():
        records.append(
            {
                "type": "variables",
                "engine": engine,
                "tier": tier,
                "workload": workload,
                "values": values,
            }
        )
    cells = ledger.cell_rows()
    records.append(
        {
            "type": "cells",
            "cells": [
                [c["engine"], c["tier"], c["workload"], bool(c["network"]), c["threads"],
                 c["repetition"], c["definition"], c["rate"]]
                for c in cells
            ],
        }
    )  # fmt: skip
    for cell in cells:
        if cell["run_id"] is not None and cell["started_at"]:
            records.append(
                {"type": "running", "key": cell["key"], "run": cell["run_id"],
                 "started_at": cell["started_at"]}
            )  # fmt: skip
        if cell["status"] in ("done", "failed"):
            records.append(
                {
                    "type": "result",
                    "key": cell["key"],
                    "status": cell["status"],
                    "summary": summary_columns(cell),
                    "flags": [f for f in cell["flags"].split(",") if f],
                    "artifact": cell["artifact"],
                    "reason": cell["reason"],
                    "notes": cell["notes"],
                    "clock": None,
                    "finished_at": cell["finished_at"],
                }
            )
    return records
