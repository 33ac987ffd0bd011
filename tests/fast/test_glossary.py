"""The glossary (docs/reference/glossary.md) defines every column `oltplab export` writes
and every validity flag, and nothing that no longer exists. Both lists come from the code:
the columns from the headers the command writes for each table of a small imported tree,
the flags from sysbench/validity.py, which names each one the measuring code appends."""

from __future__ import annotations

import ast
import csv
import importlib
import io
import re
import sqlite3
from pathlib import Path

import pytest

from oltplab.analysis import findings
from oltplab.base.metrics import percentile_of
from oltplab.report.exported import ExportTable
from oltplab.report.tool_formats import OTAVA_METRICS
from oltplab.sysbench.validity import FLAGS
from tests.support.cli import oltplab
from tests.support.trees import tree

ROOT = Path(__file__).parents[2]
PAGE = ROOT / "docs" / "reference" / "glossary.md"
SOURCE = ROOT / "src" / "oltplab"
# The terms that stand for columns named after what they hold: one per latency percentile
# the cells ran with, one per point and metric of the Otava history.
LATENCY_TERM = "lat_pN_ms"
OTAVA_TERM = "ENGINE/SCENARIO/TIER/Nt/METRIC"
OTAVA_FLAGS_TERM = "ENGINE/SCENARIO/TIER/Nt/flags"


def _section(text: str, heading: str) -> str:
    """The text under a `## ` heading, up to the next one."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def defined_terms(text: str) -> dict[str, str]:
    """The glossary directive's terms, each with its definition."""
    body = text.split("```{glossary}\n", 1)[1].split("\n```", 1)[0]
    terms: dict[str, str] = {}
    term = None
    for line in body.splitlines():
        if line and not line[0].isspace():
            term = line.strip()
            terms[term] = ""
        elif term is not None:
            terms[term] += line.strip() + " "
    return terms


def listed_tables(text: str) -> dict[str, list[str]]:
    """Each table of "The tables" with the terms its definition names, in order."""
    tables: dict[str, list[str]] = {}
    lines = _section(text, "The tables").splitlines()
    name = ""
    for line, after in zip(lines, [*lines[1:], ""], strict=True):
        if after.startswith(": "):
            name = line.strip()
            tables[name] = []
        elif name and line.startswith((": ", "  ")):
            tables[name] += re.findall(r"\{term\}`([^`]+)`", line)
        else:
            name = ""
    return tables


def flag_headings(text: str) -> list[str]:
    return re.findall(r"^### (\S+)$", _section(text, "Validity flags"), re.MULTILINE)


def as_terms(header: list[str]) -> list[str]:
    """A header in the glossary's terms: the latency columns as one term, each Otava
    point-and-metric column as another, each point's flags as a third."""
    out: list[str] = []
    for column in header:
        if percentile_of(column) is not None:
            column = LATENCY_TERM
        elif column.endswith("/flags"):
            column = OTAVA_FLAGS_TERM
        elif "/" in column:
            assert column.rsplit("/", 1)[1] in dict(OTAVA_METRICS), column
            column = OTAVA_TERM
        if not out or out[-1] != column:
            out.append(column)
    return out


@pytest.fixture(scope="module")
def headers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The header `oltplab export` writes for each table, and for the Otava history."""
    root = tmp_path_factory.mktemp("glossary")
    tree(root / "tree", 1, threads=(1,), repetitions=1)
    done = oltplab("import", "tree", "-r", "results", cwd=root)
    assert done.returncode == 0, done.stderr
    found = {}
    for table in ExportTable:
        exported = oltplab("export", "results", "--table", table.value, "--format", "csv",
                           cwd=root)  # fmt: skip
        assert exported.returncode == 0, exported.stderr
        found[table.value] = next(csv.reader(io.StringIO(exported.stdout)))
    # Its one cell flagged, so that the history has a flags column too.
    with sqlite3.connect(root / "results" / "ledger.sqlite") as db:
        db.execute("UPDATE cells SET flags = 'interference'")
    exported = oltplab("export", "results", "--format", "otava", "--include-flagged",
                       "-o", "history.csv", cwd=root)  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    found["otava"] = next(csv.reader(io.StringIO((root / "history.csv").read_text())))
    return found


def test_each_table_lists_the_columns_the_export_writes_in_their_order(
    headers: dict[str, list[str]],
) -> None:
    listed = listed_tables(PAGE.read_text())
    assert {name: as_terms(header) for name, header in headers.items()} == listed


def test_the_glossary_defines_every_column_written_and_no_other(
    headers: dict[str, list[str]],
) -> None:
    written = {term for header in headers.values() for term in as_terms(header)}
    assert set(defined_terms(PAGE.read_text())) == written


def test_the_otava_term_names_each_metric_the_history_has() -> None:
    definition = defined_terms(PAGE.read_text())[OTAVA_TERM]
    assert [m for m, _ in OTAVA_METRICS if f"`{m}`" not in definition] == []


def test_the_glossary_defines_every_validity_flag_and_no_other() -> None:
    assert flag_headings(PAGE.read_text()) == list(FLAGS)


def test_every_finding_kind_is_told() -> None:
    kinds = {
        node.args[0].value
        for node in ast.walk(ast.parse(Path(findings.__file__).read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Finding"
        and isinstance(node.args[0], ast.Constant)
    }
    told = set(re.findall(r"`([a-z-]+)`", defined_terms(PAGE.read_text())["kind"]))
    assert kinds and kinds <= told, kinds - told


def _flag_value(module: object, node: ast.expr) -> object:
    """What a name appended to a list of flags stands for, in its module."""
    if isinstance(node, ast.Name):
        return getattr(module, node.id, node)
    if isinstance(node, ast.Attribute):
        return getattr(_flag_value(module, node.value), node.attr, node)
    return node  # a literal, or anything not named: not one of FLAGS


def test_the_code_flags_cells_only_with_the_flags_validity_names() -> None:
    """A flag written as a literal somewhere would reach the ledger without the glossary
    knowing it: every value appended to `flags`, or returned as a list of them by
    validity_flags, must be one of FLAGS."""
    strays = []
    for path in sorted(SOURCE.rglob("*.py")):
        tree_ = ast.parse(path.read_text())
        found = [
            node.args[0]
            for node in ast.walk(tree_)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "append"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "flags"
        ]
        found += [
            element
            for function in ast.walk(tree_)
            if isinstance(function, ast.FunctionDef) and function.name == "validity_flags"
            for node in ast.walk(function)
            if isinstance(node, ast.Return) and isinstance(node.value, ast.List)
            for element in node.value.elts
        ]
        if not found:
            continue
        name = ".".join(("oltplab", *path.relative_to(SOURCE).with_suffix("").parts))
        module = importlib.import_module(name)
        strays += [
            f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}"
            for node in found
            if _flag_value(module, node) not in FLAGS
        ]
    assert strays == []
