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
from oltplab.spec.schema_docs import KEYS, SCHEMA
from tests.support.docs import generated
from tests.support.tutorial import steps

ROOT = Path(__file__).parents[2]


def test_the_cli_reference_is_what_the_code_generates_now() -> None:
    """Regenerate with python3 -m oltplab.cli.reference when a command or option changes."""
    assert (ROOT / PAGE).read_text() == generated("oltplab.cli.reference", PAGE)


@pytest.mark.parametrize("page", [SCHEMA, KEYS], ids=lambda page: page.name)
def test_the_spec_pages_are_what_the_models_generate_now(page: Path) -> None:
    """Regenerate with python3 -m oltplab.spec.schema_docs when a spec field changes."""
    assert (ROOT / page).read_text() == generated("oltplab.spec.schema_docs", page)


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


def _options(command: Any) -> set[str]:
    return {o for p in command.params for o in [*getattr(p, "opts", []), *p.secondary_opts]}


def _commands(command: Any, path: tuple[str, ...] = ()) -> dict[str, set[str]]:
    """Each command's words, without `oltplab`, and the options it takes."""
    if not hasattr(command, "commands"):
        return {" ".join(path): _options(command)}
    found: dict[str, set[str]] = {}
    for name, sub in command.commands.items():
        found.update(_commands(sub, (*path, name)))
    return found


# Options the pages name that belong to the tools oltplab drives, each with its tool.
FOREIGN_OPTIONS = {
    "--init-file": "mysqld",
    "--initialize": "mysqld",
    "--defaults-file": "mysqld and the mysql client",
    "--pwfile": "PostgreSQL's initdb",
    "--exclusive": "Slurm's sbatch",
    "--key": "sysbench (`--key=value`: any option of a workload's)",
    "--isolation": "bench/precision.py",
    "--against": "bench/profile_coverage.py",
    "--with-operators": "scripts/kube-up.sh",
    "--enable-aggregator-routing": "kube-apiserver",
    "--webhook": "mariadb-operator's controller",
}
SYSBENCH_HELP = ROOT / "tests" / "data" / "sysbench_help" / "general.txt"
OPTION = re.compile(r"--?[a-zA-Z][\w-]*")


def _spans_and_commands(page: Path) -> list[str]:
    """A page's code spans and the lines of its sh blocks, each `&&` part apart."""
    text = page.read_text()
    fence = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
    found = re.findall(r"`([^`]+)`", fence.sub("", text).replace("\n", " "))
    for language, block in fence.findall(text):
        found += block.splitlines() if language == "sh" else []
    return [part.strip() for line in found for part in line.split("&&")]


def test_every_option_a_page_names_is_one_its_command_takes() -> None:
    """`oltplab CMD ... --option` in a page is an option of CMD; an option named alone is
    one of some oltplab command's, of sysbench's (its recorded --help), or of a tool listed
    with its owner above (docs/reference/exports.md once named `--cut`, and
    docs/tutorials/import-results.md `--precision`, which no command has)."""
    root: Any = typer.main.get_command(app)
    commands = _commands(root)
    anywhere = set().union(*commands.values(), _options(root), FOREIGN_OPTIONS)
    anywhere |= set(re.findall(r"^\s+(--[\w-]+)", SYSBENCH_HELP.read_text(), re.MULTILINE))
    # The command-line reference is the code's own (test above).
    pages = [ROOT / "README.md", *(p for p in (ROOT / "docs").rglob("*.md")
                                  if not {"_build", "_generated"} & set(p.parts)
                                  and p != ROOT / PAGE)]  # fmt: skip
    wrong = []
    for page in pages:
        for said in _spans_and_commands(page):
            words = said.split()
            if words[:1] == ["oltplab"]:
                name = next((c for c in sorted(commands, key=len, reverse=True)
                             if words[1:1 + len(c.split())] == c.split()), None)  # fmt: skip
                if name is None:
                    continue  # `oltplab --help` and the like
                takes = commands[name] | _options(root) | {"--help"}
                wrong += [(page.name, said) for w in words
                          if OPTION.fullmatch(w.split("=")[0]) and w.split("=")[0] not in takes]  # fmt: skip
            elif said.startswith("--") and said.split()[0].split("=")[0] not in anywhere:
                wrong.append((page.name, said))
    assert not wrong, wrong
