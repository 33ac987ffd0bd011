"""The spec's JSON Schema and its table of keys, generated from the pydantic models that
validate specs, for the documentation and for editors (a TOML editor that reads JSON Schema
completes and checks a spec with it). `python3 -m oltplab.spec.schema_docs` writes
docs/reference/spec.schema.json and docs/reference/spec-keys.md; a test fails when either
differs from what the models generate now."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from oltplab.spec import Spec

SCHEMA = Path("docs") / "reference" / "spec.schema.json"
KEYS = Path("docs") / "reference" / "spec-keys.md"


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


def _type(field: dict[str, Any]) -> str:
    if "$ref" in field:
        return f"table ({field['$ref'].rsplit('/', 1)[1]})"
    if "enum" in field:
        return " or ".join(f'`"{value}"`' for value in field["enum"])
    for union in ("anyOf", "oneOf"):
        if union in field:
            options = [option for option in field[union] if option != {"type": "null"}]
            return " or ".join(_type(option) for option in options)
    kind = str(field.get("type", "any"))
    if kind == "array":
        return f"list of {_type(field.get('items', {}))}"
    if kind == "object":
        return "table"
    return {"integer": "integer", "number": "number", "boolean": "boolean"}.get(kind, kind)


def _default(field: dict[str, Any], required: bool) -> str:
    if required:
        return "required"
    value = field.get("default")
    if (
        value is None
        or isinstance(value, dict)
        or (isinstance(value, list) and value and isinstance(value[0], dict))
    ):
        return ""
    return f"`{json.dumps(value)}`"


def keys_page() -> str:
    """Every key a spec may hold, section by section, with its type and default."""
    schema = Spec.model_json_schema()
    definitions = schema["$defs"]
    lines = [
        "# Spec keys",
        "",
        "Generated from the models that validate a spec (`python3 -m oltplab.spec.schema_docs`);",
        '[The spec](spec.md) says what the sections are for. Sizes are text like `"128M"`.',
    ]
    sections: list[tuple[str, dict[str, Any]]] = [("top level", schema)]
    seen = set()
    for key, field in schema["properties"].items():
        ref = field.get("$ref") or field.get("items", {}).get("$ref")
        for option in field.get("items", {}).get("anyOf", []):
            ref = ref or option.get("$ref")
        if ref:
            name = ref.rsplit("/", 1)[1]
            seen.add(name)
            title = f"[[{key}]]" if field.get("type") == "array" else f"[{key}]"
            sections.append((title, definitions[name]))
    # Sources and the like: tables a section's keys hold.
    sections += [(name, model) for name, model in sorted(definitions.items()) if name not in seen]
    for title, model in sections:
        required = set(model.get("required", []))
        lines += ["", f"## `{title}`" if title != "top level" else "## Top level", ""]
        if model.get("description") and title != "top level":
            lines += [model["description"], ""]
        lines += ["| key | type | default |", "| --- | --- | --- |"]
        for key, field in model.get("properties", {}).items():
            lines.append(f"| `{key}` | {_type(field)} | {_default(field, key in required)} |")
    return "\n".join(lines) + "\n"


def write_generated(text: str, default: Path, folder: Path | None = None) -> None:
    """A generated page of the documentation, in the folder the command line gives or at
    its place."""
    target = (folder / default.name) if folder else default
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    print(f"written: {target}; next: bash scripts/docs.sh")


if __name__ == "__main__":
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    write_generated(spec_schema(), SCHEMA, where)
    write_generated(keys_page(), KEYS, where)
