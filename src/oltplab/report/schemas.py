"""JSON Schemas of the JSON that oltplab writes for other programs: a results directory's
run.json, from the model that reads it back, and each table of `oltplab export --format
json`, from the columns the export writes and the kind of value each column holds.

`python3 -m oltplab.report.schemas` writes docs/reference/run.schema.json and
docs/reference/export.schema.json; a test fails when either differs from what the code
generates now, and validates real files against them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from oltplab.base.metrics import LATENCY_PATTERN
from oltplab.report.export import TABLES, columns_of
from oltplab.spec.schema_docs import write_generated
from oltplab.store.provenance import READABLE_FORMATS, RunJson

RUN_SCHEMA = Path("docs") / "reference" / "run.schema.json"
EXPORT_SCHEMA = Path("docs") / "reference" / "export.schema.json"
DRAFT = "https://json-schema.org/draft/2020-12/schema"

TEXT, NUMBER, INTEGER, BOOLEAN = "string", "number", "integer", "boolean"
# fmt: off
# The kind of value each column holds where it has one; JSON has null where it has none.
COLUMN_TYPES = {
    **dict.fromkeys((
        "scenario", "family", "version", "engine", "tier", "workload", "status",
        "ignored_errors", "flags", "notes", "machine", "baseline_version", "verdict", "method",
        "machines", "kind", "detail", "reason", "series", "last_good", "first_changed",
        "comparison", "a", "b", "measure", "baseline", "type", "transaction_errors",
    ), TEXT),
    **dict.fromkeys((
        "threads", "repetition", "n", "runs", "rounds", "steady_from_s", "committed",
        "rollbacks", "retries", "gave_up", "consistency_checked", "consistency_failed",
    ), INTEGER),
    "saturated": BOOLEAN,
}
# fmt: on


def column_type(column: str) -> str:
    """A column's kind of value: those not listed are figures."""
    return COLUMN_TYPES.get(column, NUMBER)


def _row(columns: tuple[str, ...], latency: bool) -> dict[str, Any]:
    row: dict[str, Any] = {
        "type": "object",
        "properties": {c: {"type": [column_type(c), "null"]} for c in columns},
        "required": list(columns),
        "additionalProperties": False,
    }
    if latency:
        # One latency column per percentile the runs used (`lat_p95_ms`).
        row["patternProperties"] = {LATENCY_PATTERN: {"type": [NUMBER, "null"]}}
    return row


def export_schema() -> str:
    """Each table as a list of rows, under `$defs/TABLE`; a file is any one of them."""
    tables = {
        table: {
            "description": f"oltplab export --table {table} --format json",
            "type": "array",
            "items": _row(columns_of(table, []), table == "summary"),
        }
        for table in TABLES
    }
    schema = {
        "$schema": DRAFT,
        "title": "oltplab export --format json",
        "$defs": tables,
        "anyOf": [{"$ref": f"#/$defs/{table}"} for table in TABLES],
    }
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def run_schema() -> str:
    schema = {"$schema": DRAFT, **RunJson.model_json_schema(), "title": "oltplab run.json"}
    # What the model's validator checks beyond the type: the formats this oltplab reads.
    schema["properties"]["format"]["enum"] = list(READABLE_FORMATS)
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    write_generated(run_schema(), RUN_SCHEMA, where)
    write_generated(export_schema(), EXPORT_SCHEMA, where)
