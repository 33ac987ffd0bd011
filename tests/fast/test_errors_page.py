"""docs/reference/errors.md against the code: the exit statuses every command and `gate`
can end with, the error classes and the status each gives, and the codes of the errors
sysbench ignores that oltplab names; each page table lists exactly what the code has."""

from __future__ import annotations

import ast
from pathlib import Path

from oltplab.analysis.gate import GateVerdict
from oltplab.base import errors
from oltplab.sysbench.error_codes import MEANINGS

ROOT = Path(__file__).parents[2]
PAGE = ROOT / "docs" / "reference" / "errors.md"
README = ROOT / "README.md"
CLI = ROOT / "src" / "oltplab" / "cli"


def table(heading: str) -> list[list[str]]:
    """The rows of the first table under a `## ` heading, cells stripped of backticks."""
    text = PAGE.read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    rows = [
        [cell.strip().strip("`") for cell in line.strip("|").split("|")]
        for line in text[start : end if end != -1 else len(text)].splitlines()
        if line.startswith("|")
    ]
    return rows[2:]  # past the header and its rule


def test_every_exit_status_the_code_defines_is_on_the_page_and_no_other() -> None:
    defined = {0} | {v for k, v in vars(errors).items() if k.startswith("EXIT_")}
    assert sorted(int(row[0]) for row in table("Exit statuses")) == sorted(defined)


def test_the_readmes_exit_codes_are_the_codes_the_code_defines_with_the_pages_meanings() -> None:
    """The README's one-line list: every status, none more, each with the page's meaning."""
    said = " ".join(README.read_text().split())
    listed = said.split("Exit codes, for every command: ", 1)[1].split(".", 1)[0]
    codes = {int(part.split()[0]): part for part in listed.split("; ")}
    defined = {0} | {v for k, v in vars(errors).items() if k.startswith("EXIT_")}
    assert sorted(codes) == sorted(defined), listed
    for row in table("Exit statuses"):
        for meaning in row[1].split(", or "):
            assert meaning.removeprefix("a ") in codes[int(row[0])], (row, listed)


def test_the_gates_outcomes_are_statuses_every_command_shares() -> None:
    """The gate has no statuses of its own: each verdict is a row of the one table."""
    meanings = {int(row[0]): row[1] for row in table("Exit statuses")}
    words = {
        GateVerdict.PASSED: "done",
        GateVerdict.REGRESSED: "regression",
        GateVerdict.UNDECIDED: "undecided",
    }
    for outcome, word in words.items():
        assert word in meanings[outcome.value], (outcome, meanings)


def test_every_error_class_is_on_the_page_with_its_exit_status() -> None:
    classes = {
        value.__name__: value.exit_code
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, errors.OltplabError)
    }
    assert {row[0]: int(row[1]) for row in table("Error classes")} == classes


def test_every_error_code_oltplab_names_is_on_the_page_with_its_meaning() -> None:
    assert {row[0]: row[2] for row in table("Error codes in ignored errors")} == MEANINGS


def test_the_command_line_exits_only_with_the_statuses_the_page_lists() -> None:
    """A status written as a number in the command line could be one the page does not
    know: every exit it asks for is 0 or a named value."""
    numbers = []
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and ast.unparse(node.func) in ("sys.exit", "typer.Exit")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value != 0
            ):
                numbers.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert numbers == []
