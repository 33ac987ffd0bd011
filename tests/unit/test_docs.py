"""The documentation says what the code does: its generated pages are what the code
generates now."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest

from oltplab.cli.reference import PAGE
from oltplab.spec.reference import SCHEMA

ROOT = Path(__file__).parents[2]


def generated(module: str, folder: Path) -> str:
    """A page as a fresh interpreter writes it: in this one, test modules have registered
    families and devices of their own, which the help of some options lists."""
    target = folder / "page"
    subprocess.run([sys.executable, "-m", module, str(target)], check=True, capture_output=True)
    return target.read_text()


def test_the_cli_reference_is_what_the_code_generates_now(tmp_path: Path) -> None:
    """Regenerate with python3 -m oltplab.cli.reference when a command or option changes."""
    assert (ROOT / PAGE).read_text() == generated("oltplab.cli.reference", tmp_path)


def test_the_spec_schema_is_what_the_models_generate_now(tmp_path: Path) -> None:
    """Regenerate with python3 -m oltplab.spec.reference when a spec field changes."""
    assert (ROOT / SCHEMA).read_text() == generated("oltplab.spec.reference", tmp_path)


SPECS = [
    *sorted((ROOT / "examples").glob("*.toml")),
    ROOT / "src" / "oltplab" / "spec" / "demo.toml",
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda path: path.name)
def test_an_editor_given_the_schema_accepts_every_example_spec(spec: Path) -> None:
    """The schema describes what a spec may say (sizes as text, workloads by name), not only
    what the models hold once validated: every example passes it."""
    schema = json.loads((ROOT / SCHEMA).read_text())
    errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(
        tomllib.loads(spec.read_text())
    )]  # fmt: skip
    assert errors == []


def test_the_schema_refuses_what_the_models_refuse() -> None:
    schema = json.loads((ROOT / SCHEMA).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    assert not validator.is_valid({"engines": [{"name": "mysql-8.0.31"}], "speed": 1})
    assert not validator.is_valid({"engines": []})
