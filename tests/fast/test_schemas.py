"""The JSON Schemas of run.json and of the JSON exports (docs/reference/*.schema.json) are
what the code generates now, and real files validate against them: the run.json of the
results directories kept in tests/data, and every table exported as JSON from three
results (a synthetic import, a directory of ledger schema 4, a real TPC-C-like run)."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from oltplab.report.export import TABLES
from oltplab.report.schemas import EXPORT_SCHEMA, RUN_SCHEMA
from tests.support.cli import oltplab
from tests.support.docs import generated
from tests.support.golden import build_tree

ROOT = Path(__file__).parents[2]
DATA = ROOT / "tests" / "data"


@pytest.mark.parametrize("page", [RUN_SCHEMA, EXPORT_SCHEMA], ids=lambda page: page.name)
def test_the_schemas_are_what_the_code_generates_now(page: Path) -> None:
    """Regenerate with python3 -m oltplab.report.schemas when a column or run.json changes."""
    assert (ROOT / page).read_text() == generated("oltplab.report.schemas", page)


def problems(schema: dict[str, Any], document: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("schemas")
    build_tree(root / "tree")
    done = oltplab("import", "tree", "-r", "golden", cwd=root)
    assert done.returncode == 0, done.stderr
    shutil.copytree(DATA / "results-v4", root / "v4", ignore=shutil.ignore_patterns("expected"))
    with tarfile.open(DATA / "tpcc-precision.tar.xz") as packed:
        packed.extractall(root / "tpcc", filter="data")
    return [root / "golden", root / "v4", root / "tpcc"]


def test_every_run_json_kept_validates(results: list[Path]) -> None:
    schema = json.loads((ROOT / RUN_SCHEMA).read_text())
    kept = [folder / "run.json" for folder in results if (folder / "run.json").is_file()]
    assert len(kept) == 2
    for path in kept:
        assert problems(schema, json.loads(path.read_text())) == [], path


def test_every_table_exported_as_json_validates(results: list[Path]) -> None:
    schema = json.loads((ROOT / EXPORT_SCHEMA).read_text())
    filled = set()
    for folder in results:
        for table in TABLES:
            done = oltplab("export", folder.name, "-t", table, "-f", "json", cwd=folder.parent)
            assert done.returncode == 0, done.stderr
            rows = json.loads(done.stdout)
            one_table = {"$defs": schema["$defs"], "$ref": f"#/$defs/{table}"}
            assert problems(one_table, rows) == [], (folder.name, table)
            assert problems(schema, rows) == [], (folder.name, table)
            filled |= {table} if rows else set()
    # Every table but the change points (they need three releases of a family) and the
    # costs (two releases of a family with the server's CPU series).
    assert filled == set(TABLES) - {"changes", "costs"}
