"""A damaged, truncated or edited ledger: one line and exit 3 from every command, nothing
read as data, and `oltplab rebuild` gives back exactly what was there."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.support.cli import oltplab
from tests.support.golden import build_tree

ENVIRONMENT = 3


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    """An imported tree and its summary export, made once; each test damages a copy."""
    root = tmp_path_factory.mktemp("damage")
    build_tree(root / "tree")
    done = oltplab("import", "tree", "--results", "results", cwd=root)
    assert done.returncode == 0, done.stderr
    exported = oltplab("export", "results", cwd=root)
    assert exported.returncode == 0, exported.stderr
    return root, exported.stdout


@pytest.fixture
def results(original, tmp_path):
    root, _ = original
    (tmp_path / "results").mkdir()
    for path in (root / "results").iterdir():
        (tmp_path / "results" / path.name).write_bytes(path.read_bytes())
    (tmp_path / "tree").symlink_to(root / "tree")
    return tmp_path / "results"


def assert_one_line(done, code: int, *fragments: str) -> str:
    assert done.returncode == code, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def every_command_refuses(results: Path, *fragments: str) -> None:
    cwd = results.parent
    for command in (
        ["status", "results"],
        ["export", "results"],
        ["report", "results"],
        ["import", "tree", "--results", "results"],
    ):
        line = assert_one_line(oltplab(*command, cwd=cwd), ENVIRONMENT, *fragments)
        assert "oltplab rebuild" in line and "--salvage" in line, line


def rebuilt_export(results: Path) -> str:
    cwd = results.parent
    done = oltplab("rebuild", "results", cwd=cwd)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rebuilt (17 done, 2 failed)" in done.stdout
    assert list(results.glob("ledger.sqlite.damaged-*")), "the damaged ledger is kept"
    exported = oltplab("export", "results", cwd=cwd)
    assert exported.returncode == 0, exported.stderr
    return exported.stdout


def test_a_damaged_page_is_caught_and_the_ledger_rebuilt(results, original):
    ledger = results / "ledger.sqlite"
    db = sqlite3.connect(ledger)
    [(page,)] = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'samples'")
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    with ledger.open("r+b") as handle:
        handle.seek((page - 1) * page_size)
        handle.write(b"\xa5" * page_size)
    every_command_refuses(results, "ledger.sqlite is damaged")
    assert rebuilt_export(results) == original[1]


def test_a_truncated_ledger_is_caught_and_rebuilt(results, original):
    ledger = results / "ledger.sqlite"
    with ledger.open("r+b") as handle:
        handle.truncate(ledger.stat().st_size // 2)
    every_command_refuses(results, "ledger.sqlite is damaged")
    assert rebuilt_export(results) == original[1]


def test_a_ledger_cut_to_nothing_is_not_taken_for_a_new_one(results, original):
    (results / "ledger.sqlite").write_bytes(b"")
    every_command_refuses(results, "is damaged (the file is empty)")
    assert rebuilt_export(results) == original[1]


def test_a_value_of_the_wrong_type_is_never_exported(results, original):
    db = sqlite3.connect(results / "ledger.sqlite")
    [(key,)] = db.execute(
        "SELECT c.key FROM summaries s JOIN cells c ON c.id = s.cell_id ORDER BY c.id LIMIT 1"
    )
    db.execute(
        "UPDATE summaries SET tps = 'abc' WHERE cell_id = (SELECT MIN(cell_id) FROM summaries)"
    )
    db.commit()
    db.close()
    every_command_refuses(results, f"cell {key!r}: tps holds 'abc' where a number belongs")
    # What can still be read: every cell, that one's TPS left empty and named on stderr.
    salvaged = oltplab("export", "results", "--salvage", cwd=results.parent)
    assert salvaged.returncode == 0, salvaged.stderr
    assert salvaged.stderr.strip() == f"lost: cell {key!r}: tps held 'abc'"
    assert len(salvaged.stdout.strip().splitlines()) == 1 + 19
    assert "abc" not in salvaged.stdout
    assert rebuilt_export(results) == original[1]


def test_a_rebuild_without_a_journal_says_why(results):
    (results / "journal.jsonl").unlink()
    done = oltplab("rebuild", "results", cwd=results.parent)
    assert_one_line(done, 2, "no journal.jsonl to rebuild from")
    assert not list(results.glob("ledger.sqlite.damaged-*"))


@pytest.mark.parametrize("damaged", ["summaries", "engines", "sqlite_autoindex_cells_1"])
def test_salvage_reads_every_row_a_damaged_page_spares(results, damaged):
    """A page of a summary table or of an index overwritten: every cell row is still
    given, what was on the page is named as lost, and nothing else is."""
    ledger = results / "ledger.sqlite"
    db = sqlite3.connect(ledger)
    [(page,)] = db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (damaged,))
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    with ledger.open("r+b") as handle:
        handle.seek((page - 1) * page_size)
        handle.write(b"\xa5" * page_size)
    salvaged = oltplab("export", "results", "--salvage", cwd=results.parent)
    assert salvaged.returncode == 0, salvaged.stderr
    rows = salvaged.stdout.strip().splitlines()
    assert len(rows) == 1 + 19, salvaged.stdout
    header = rows[0].split(",")
    tps = [row.split(",")[header.index("tps_whole_run")] for row in rows[1:]]
    statuses = [row.split(",")[header.index("status")] for row in rows[1:]]
    assert statuses.count("done") == 17 and statuses.count("failed") == 2, statuses
    if damaged == "summaries":
        assert "lost: table summaries: unreadable" in salvaged.stderr, salvaged.stderr
        assert tps == [""] * 19
    else:
        # The summaries survived: every done cell has its TPS.
        assert "summaries" not in salvaged.stderr, salvaged.stderr
        assert all(value for value, status in zip(tps, statuses, strict=True) if status == "done")
