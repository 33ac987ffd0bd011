"""Validity flags produced by real runs: a stall, reconnects, and the client's CPU share."""

import os
import signal
import time

from oltplab.engines.server import SYSBENCH_OPTIONS, vault
from tests.support.cli import start_oltplab
from tests.support.engines import cells, processes_using, spec_text, wait_for


def output_of(results, threads):
    files = list((results / "benchmark_logs").rglob(f"Tier*_{threads}th.sysbench.txt"))
    return files[0].read_text() if files else ""


def notes_and_flags(results):
    import sqlite3

    db = sqlite3.connect(results / "ledger.sqlite")
    try:
        return list(db.execute("SELECT threads, flags, notes, status FROM cells ORDER BY id"))
    finally:
        db.close()


def test_pausing_the_engine_for_five_seconds_of_a_six_second_cell_is_a_stall(tmp_path):
    """Most of the cell's seconds stalled (its median TPS is 0): flagged all the same."""
    (tmp_path / "s.toml").write_text(spec_text(["mariadb-debian"], threads=[2], measure=6))
    out = tmp_path / "out"
    run = start_oltplab("run", "s.toml", "--results", "out", cwd=tmp_path)
    wait_for(lambda: "[ 1s ]" in output_of(out, 2), 180, "the cell's first second")
    pid = int((out / ".work" / "mariadb-debian" / "mysqld.pid").read_text())
    os.kill(pid, signal.SIGSTOP)
    time.sleep(5)
    os.kill(pid, signal.SIGCONT)
    output, _ = run.communicate(timeout=120)
    assert run.returncode == 0, output
    [(_threads, flags, notes, status)] = notes_and_flags(out)
    assert status == "done" and "stall" in flags.split(","), (flags, notes)
    first, last = (int(s) for s in notes.split("stall ")[1].split(" s")[0].split("-"))
    assert 1 <= first <= 3 and 4 <= last - first + 1 <= 6, notes
    assert "stall" in output  # the run's own summary marks it
    assert "* flagged: the report says why" in output  # and its TPS table


def test_a_sysbench_killed_by_a_signal_fails_the_cell_naming_it(tmp_path):
    """sysbench 1.0.20 asked to reconnect (--mysql-ignore-errors=all, which a spec may no
    longer give) segfaulted; a sysbench that dies of a signal, for that reason or another,
    must fail the cell with the signal said, not pass with half a run."""
    (tmp_path / "s.toml").write_text(spec_text(["mariadb-debian"], threads=[2], measure=8))
    out = tmp_path / "out"
    run = start_oltplab("run", "s.toml", "--results", "out", cwd=tmp_path)
    wait_for(lambda: "[ 2s ]" in output_of(out, 2), 180, "two seconds of the cell")
    options = vault(out / ".work" / "mariadb-debian") / SYSBENCH_OPTIONS
    [sysbench] = processes_using(f"--config-file={options}")
    os.kill(sysbench, signal.SIGSEGV)
    output, _ = run.communicate(timeout=120)
    rows = cells(out)
    assert run.returncode == 1, output
    assert rows[0]["status"] == "failed"
    assert "sysbench was killed by signal 11" in rows[0]["reason"]
    assert "truncated" in rows[0]["flags"].split(",")


def test_every_cell_records_the_share_of_cpu_its_client_used(tmp_path):
    (tmp_path / "s.toml").write_text(spec_text(["mariadb-debian"], threads=[1, 4], measure=3))
    run = start_oltplab("run", "s.toml", "--results", "out", cwd=tmp_path)
    output, _ = run.communicate(timeout=300)
    assert run.returncode == 0, output
    for threads, flags, notes, _ in notes_and_flags(tmp_path / "out"):
        share = int(notes.split("client CPU ")[1].rstrip("%"))
        assert 1 <= share <= 100, (threads, notes)
        assert ("client-bound" in flags) == (share > 90)
