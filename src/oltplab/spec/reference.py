"""The spec's JSON Schema, generated from the pydantic models that validate specs, for the
documentation and for editors (a TOML editor that reads JSON Schema completes and checks a
spec with it). `python3 -m oltplab.spec.reference` writes docs/reference/spec.schema.json; a
test fails when the file differs from what the models generate now."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from oltplab.spec import Spec

SCHEMA = Path("docs") / "reference" / "spec.schema.json"


def spec_schema() -> str:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **Spec.model_json_schema(),
        "title": "oltplab spec",
    }
    # What a spec may leave out that the models fill in before validating: a workload
    # given by its script is named after the script's file.
    schema["$defs"]["WorkloadSpec"]["required"].remove("name")
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write_generated(text: str, default: Path) -> None:
    """A generated page of the documentation, where the command line says or at its place."""
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    print(f"written: {target}; next: bash scripts/docs.sh")


if __name__ == "__main__":
    write_generated(spec_schema(), SCHEMA)
