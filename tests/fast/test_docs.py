"""The documentation says what the code does: its generated pages are what the code
generates now, the README is a landing page whose links resolve, and the first tutorial's
commands are ones the command line has."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import typer

from oltplab.cli import app
from oltplab.cli.reference import PAGE
from oltplab.spec.reference import KEYS, SCHEMA
from tests.support.docs import generated
from tests.support.tutorial import steps

ROOT = Path(__file__).parents[2]


def test_the_cli_reference_is_what_the_code_generates_now() -> None:
    """Regenerate with python3 -m oltplab.cli.reference when a command or option changes."""
    assert (ROOT / PAGE).read_text() == generated("oltplab.cli.reference", PAGE)


@pytest.mark.parametrize("page", [SCHEMA, KEYS], ids=lambda page: page.name)
def test_the_spec_pages_are_what_the_models_generate_now(page: Path) -> None:
    """Regenerate with python3 -m oltplab.spec.reference when a spec field changes."""
    assert (ROOT / page).read_text() == generated("oltplab.spec.reference", page)


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


README = ROOT / "README.md"
# [text](target): a link, not an image; targets with a scheme or only an anchor are not files.
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def github_anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a Markdown page's headings (code blocks hold none)."""
    anchors, fenced = set(), False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"#{1,6} (.+)", line)):
            text = re.sub(r"[^\w\- ]", "", heading.group(1).lower())
            anchors.add(text.replace(" ", "-"))
    return anchors


def test_the_readme_is_a_landing_page_of_at_most_150_lines() -> None:
    assert len(README.read_text().splitlines()) <= 150


def test_every_relative_link_of_the_readme_resolves() -> None:
    targets = [t for t in _LINK.findall(README.read_text()) if not re.match(r"\w+:", t)]
    assert targets, "the README links into the docs"
    for target in targets:
        path, _, anchor = target.partition("#")
        page = (README.parent / path) if path else README
        assert page.is_file(), f"{target}: no such file"
        if anchor:
            assert anchor in github_anchors(page), f"{target}: no such heading"


def test_the_tutorial_runs_only_commands_the_cli_has() -> None:
    """Running them is tests/engine/test_tutorial.py's (it starts engines)."""
    page = ROOT / "docs" / "tutorials" / "first-comparison.md"
    found = steps(page)
    assert found and all(step.commands for step in found)
    assert any(step.shown for step in found)
    # Typer's own copy of Click: a group is what has commands.
    root: Any = typer.main.get_command(app)
    for step in found:
        for command in step.commands:
            current = root
            for word in command:
                if word not in getattr(current, "commands", {}):
                    break
                current = current.commands[word]
            assert current is not root and not hasattr(current, "commands"), command
