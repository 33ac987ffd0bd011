"""One writer per results directory: a second one is refused at once and touches nothing,
readers work during a run; a ledger damaged after a real run is rebuilt to the same numbers
and telemetry from the journal and the raw files."""

from __future__ import annotations

import json
import os
import signal
import sqlite3

from oltplab.store.lock import holder
from tests.support.cli import oltplab
from tests.support.engines import cells, processes_using, run_until_second_cell
from tests.support.golden import build_tree


def exports(cwd) -> dict[str, str]:
    found = {}
    for table in ("summary", "operations", "flags"):
        done = oltplab("export", "out", "--table", table, "--format", "json", cwd=cwd)
        assert done.returncode == 0, done.stderr
        found[table] = done.stdout
    return found


def test_a_second_writer_is_refused_and_a_rebuild_gives_back_the_same_numbers(tmp_path):
    build_tree(tmp_path / "tree")  # what `import` would bring in
    first, out = run_until_second_cell(tmp_path, measure=3)
    server = out / ".work" / "mariadb-debian" / "mysqld.pid"
    server_pid = int(server.read_text())
    # The run is held still (SIGSTOP) while the others try: it holds the lock however slow
    # the host, so each writer meets it held. The lock is taken without waiting
    # (store/lock.py: flock with LOCK_NB), so each is refused; one that waited would wait
    # for ever, until the call's timeout failed the test.
    assert first.poll() is None, "the run ended before the writers tried"
    os.kill(first.pid, signal.SIGSTOP)
    try:
        # Readers work meanwhile, and say who writes.
        status = oltplab("status", "out", cwd=tmp_path)
        assert status.returncode == 0 and f"running (oltplab pid {first.pid})" in status.stdout
        for writer in (
            ["run", "s.toml", "--results", "out"],
            ["import", "tree", "--results", "out"],
            ["rebuild", "out"],
        ):
            refused = oltplab(*writer, cwd=tmp_path, timeout=300)
            assert refused.returncode == 3, refused.stdout + refused.stderr
            [line] = refused.stderr.strip().splitlines()
            assert f"out: oltplab pid {first.pid} is writing here" in line, line
            assert f"kill {first.pid}" in line
            assert holder(out) == first.pid, writer  # the lock never changed hands
        assert int(server.read_text()) == server_pid and processes_using(str(server.parent))
    finally:
        os.kill(first.pid, signal.SIGCONT)

    output, _ = first.communicate(timeout=300)
    assert first.returncode == 0, output
    assert [c["status"] for c in cells(out)] == ["done"] * 3
    # The refused writers left no trace: one run in the ledger and in run.json.
    db = sqlite3.connect(out / "ledger.sqlite")
    assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1
    telemetry_rows = db.execute("SELECT COUNT(*) FROM telemetry").fetchone()[0]
    db.close()
    assert len(json.loads((out / "run.json").read_text())["runs"]) == 1
    assert telemetry_rows > 0

    before = exports(tmp_path)
    (out / "ledger.sqlite").write_bytes(b"not a ledger any more")
    assert oltplab("status", "out", cwd=tmp_path).returncode == 3
    rebuilt = oltplab("rebuild", "out", cwd=tmp_path)
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    assert "rebuilt (3 done)" in rebuilt.stdout and "not rebuilt" not in rebuilt.stderr
    db = sqlite3.connect(out / "ledger.sqlite")
    assert db.execute("SELECT COUNT(*) FROM telemetry").fetchone()[0] == telemetry_rows
    db.close()
    assert exports(tmp_path) == before
