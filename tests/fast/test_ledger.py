import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from oltplab.base.errors import OltplabError
from oltplab.measure.runner import check_compatible
from oltplab.plan import Cell
from oltplab.store.ledger import SCHEMA_VERSION, Ledger
from oltplab.store.outcome import CellOutcome
from oltplab.store.status import Status
from oltplab.sysbench.reading import read_output

DATA = Path(__file__).parent.parent / "data" / "sysbench"
A = Cell("e", "2G", "oltp_read_write", 1, 1)
B = Cell("e", "2G", "oltp_read_write", 4, 1)


def test_cells_move_from_pending_to_done_with_their_series(tmp_path):
    ledger = Ledger.open(tmp_path)
    ledger.register([(A, "d1"), (B, "d1")])
    ledger.register([(A, "d1")])  # registering again changes nothing
    run = ledger.begin_run("digest", {"host": {}})
    out = read_output(DATA / "rw_4th.sysbench.txt")
    ledger.mark_running(A, run)
    assert ledger.requeue(failed_too=False) == 1  # a run killed here leaves A running
    ledger.mark_running(A, run)
    ledger.record_result(
        A, CellOutcome(out.summary, ("short",), "x.sysbench.txt", samples=out.samples)
    )
    ledger.mark_running(B, run)
    ledger.record_failed(B, "engine process killed by signal 9 during the cell", None)
    assert ledger.counts() == {"pending": 0, "running": 0, "done": 1, "failed": 1}
    rows = {r.key: r for r in ledger.cells()}
    assert rows[A.key].tps == 889.46 and rows[A.key].flags == ("short",)
    assert rows[A.key].attempts == 2 and rows[A.key].status == Status.DONE
    assert rows[A.key].cell == A and rows[B.key].figures == {}
    assert (rows[B.key].reason or "").startswith("engine process killed")
    assert len(ledger.tps_series()[A.key]) == 10
    assert ledger.requeue(failed_too=True) == 1
    ledger.close()


def test_telemetry_is_stored_with_its_cell_and_dropped_when_the_cell_runs_again(tmp_path):
    ledger = Ledger.open(tmp_path)
    ledger.register([(A, "d1")])
    run = ledger.begin_run("digest", {"host": {}})
    out = read_output(DATA / "rw_4th.sysbench.txt")
    rows = [("vmstat", "cs", 1, 900.0), ("vmstat", "cs", 2, 950.0), ("engine", "dirty_pages", 1, 7)]
    ledger.mark_running(A, run)
    failed = CellOutcome(
        None, (), "x", "sysbench printed no summary", samples=out.samples, telemetry=tuple(rows)
    )
    ledger.record_result(A, failed)
    stored = ledger.telemetry()[A.key]
    assert stored[("vmstat", "cs")] == [(1, 900.0), (2, 950.0)]
    assert ledger.telemetry(lambda source, metric: source == "engine")[A.key].keys() == {
        ("engine", "dirty_pages")
    }
    assert ledger.requeue(failed_too=True) == 1  # a failed cell run again starts afresh
    assert ledger.telemetry() == {}
    ledger.close()


def test_results_are_durable_across_connections(tmp_path):
    ledger = Ledger.open(tmp_path)
    ledger.register([(A, "d1")])
    ledger.close()
    again = Ledger.open(tmp_path, create=False)
    assert again.definitions() == {A: "d1"}
    again.close()


def test_a_reader_never_meets_a_ledger_still_being_made(tmp_path):
    """status reads a shard's ledger while its pod creates it: from the moment the file
    is there, it opens as a ledger (CI once read one with no schema yet, exit 3)."""
    folders = [tmp_path / f"shard-{i}" for i in range(40)]
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from oltplab.store.ledger import Ledger\n"
            "for name in sys.argv[1:]: Ledger.open(Path(name)).close()",
            *map(str, folders),
        ]
    )
    try:
        for folder in folders:
            while not (folder / "ledger.sqlite").exists():
                assert writer.poll() in (None, 0)
            reader = Ledger.open(folder, create=False)
            assert reader.runs() == []
            reader.close()
    finally:
        writer.wait(timeout=60)
    assert writer.returncode == 0
    assert not list(tmp_path.glob("*/.ledger.sqlite.*"))  # nothing left of the building


def test_missing_and_foreign_ledgers_are_refused_with_a_clear_message(tmp_path):
    with pytest.raises(OltplabError, match="nothing: no such results folder"):
        Ledger.open(tmp_path / "nothing", create=False)
    (tmp_path / "ledger.sqlite").write_text("not a database, just text " * 100)
    with pytest.raises(OltplabError, match=r"is damaged .not an SQLite file"):
        Ledger.open(tmp_path)


def test_newer_schema_is_refused(tmp_path):
    Ledger.open(tmp_path).close()
    db = sqlite3.connect(tmp_path / "ledger.sqlite")
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(OltplabError, match="newer oltplab"):
        Ledger.open(tmp_path)


def test_a_spec_may_only_add_cells(tmp_path):
    again = Cell("e", "2G", "oltp_read_write", 1, 2)  # a repetition of A
    check_compatible({A: "1", again: "1"}, {A: "1", B: "1"}, tmp_path)
    with pytest.raises(OltplabError, match="cell e rw-local 2G oltp_read_write 1 was measured"):
        check_compatible({A: "1"}, {A: "2"}, tmp_path)
    with pytest.raises(OltplabError, match="no longer has"):
        check_compatible({A: "1", B: "1"}, {A: "1"}, tmp_path)


def test_a_ledger_of_schema_1_is_migrated_and_keeps_its_cells(tmp_path):
    db = sqlite3.connect(tmp_path / "ledger.sqlite")
    db.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO meta VALUES ('schema_version', '1');"
        "CREATE TABLE cells (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, engine TEXT NOT"
        " NULL, tier TEXT NOT NULL, workload TEXT NOT NULL, scenario TEXT NOT NULL, threads"
        " INTEGER NOT NULL, repetition INTEGER NOT NULL, definition TEXT NOT NULL, status TEXT"
        " NOT NULL, reason TEXT, attempts INTEGER NOT NULL DEFAULT 0, run_id INTEGER, started_at"
        " TEXT, finished_at TEXT, artifact TEXT, flags TEXT NOT NULL DEFAULT '');"
        f"INSERT INTO cells (key, engine, tier, workload, scenario, threads, repetition,"
        f" definition, status) VALUES ('{A.key}', 'e', '2G', 'oltp_read_write', 'rw-local', 1,"
        " 1, 'd1', 'done');"
    )
    db.commit()
    db.close()
    ledger = Ledger.open(tmp_path)
    assert ledger.meta("schema_version") == str(SCHEMA_VERSION)
    [row] = ledger.cells()
    assert row.key == A.key and row.notes == ""
    assert ledger.telemetry() == {}
    ledger.close()


def test_schema_3_cells_of_other_workloads_become_scenarios_of_their_own(tmp_path):
    ledger = Ledger.open(tmp_path)
    point_select = Cell("e", "2G", "oltp_point_select", 4, 2)
    default = Cell("e", "2G", "oltp_read_write", 4, 1, network=True)
    ledger.register([(point_select, "d"), (default, "d")])
    ledger.close()
    # As schema 3 stored them: other workloads under rw-*/ro-*, no network column.
    db = sqlite3.connect(tmp_path / "ledger.sqlite")
    db.execute(
        "UPDATE cells SET scenario = 'ro-local', key = 'e|ro-local|2G|oltp_point_select|4|2'"
        " WHERE workload = 'oltp_point_select'"
    )
    db.execute("ALTER TABLE cells DROP COLUMN network")
    db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    db.commit()
    db.close()

    ledger = Ledger.open(tmp_path)
    by_workload = {row.workload: row for row in ledger.cells()}
    cells = set(ledger.definitions())
    ledger.close()
    moved = by_workload["oltp_point_select"]
    assert moved.scenario == "oltp_point_select-local"
    assert moved.key == point_select.key
    assert by_workload["oltp_read_write"].key == default.key
    # Where sysbench ran is read from the scenario's old name once, into its own column.
    assert cells == {point_select, default}
