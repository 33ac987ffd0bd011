"""Validity flags produced by real runs: a stall and a sysbench killed by a signal, planted
in two cells of one run; and the client's CPU share, which every cell records (read from
the session's demo run)."""

import os
import re
import signal
import sqlite3
import time

from oltplab.engines.server import SYSBENCH_OPTIONS, vault
from tests.support.cli import start_oltplab
from tests.support.engines import cells, processes_using, spec_text, wait_for
from tests.support.tutorial import TutorialRun

MEASURE, PAUSE = 6, 5  # the engine stopped for five seconds of a six-second cell


def output_of(results, threads):
    files = list((results / "benchmark_logs").rglob(f"Tier*_{threads}th.sysbench.txt"))
    return files[0].read_text() if files else ""


def seconds_reported(results, threads) -> int:
    """The last second sysbench has reported so far in the cell of that many threads."""
    return max(map(int, re.findall(r"^\[ (\d+)s \]", output_of(results, threads), re.M)), default=0)


def notes_and_flags(results):
    db = sqlite3.connect(f"file:{results / 'ledger.sqlite'}?mode=ro", uri=True)
    try:
        return list(db.execute("SELECT threads, flags, notes, status FROM cells ORDER BY id"))
    finally:
        db.close()


def test_a_paused_engine_is_a_stall_and_a_sysbench_killed_by_a_signal_fails_its_cell(tmp_path):
    """Cell one (2 threads): the engine paused for five seconds of a six-second cell, so
    that most of its seconds stalled (its median TPS is 0): flagged all the same, with the
    seconds. Cell two (3 threads): sysbench killed by SIGSEGV. sysbench 1.0.20 asked to
    reconnect (--mysql-ignore-errors=all, which a spec may no longer give) segfaulted; a
    sysbench that dies of a signal, for that reason or another, must fail the cell with
    the signal said, not pass with half a run."""
    (tmp_path / "s.toml").write_text(spec_text(["mariadb-debian"], threads=[2, 3], measure=MEASURE))
    out = tmp_path / "out"
    run = start_oltplab(
        "run", "s.toml", "--results", "out", "--telemetry", "default,-pt-mysql-summary",
        cwd=tmp_path,
    )  # fmt: skip
    wait_for(lambda: "[ 1s ]" in output_of(out, 2), 180, "the first cell's first second")
    pid = int((out / ".work" / "mariadb-debian" / "mysqld.pid").read_text())
    os.kill(pid, signal.SIGSTOP)
    # Read from sysbench's own lines, whatever this test's own delays: every second after
    # the next one began after the pause did, and every second reported before the engine
    # goes on ended within it.
    began = seconds_reported(out, 2)
    time.sleep(PAUSE)
    ended = seconds_reported(out, 2)
    os.kill(pid, signal.SIGCONT)
    paused = range(began + 2, min(ended, MEASURE) + 1)  # seconds wholly within the pause

    wait_for(lambda: "[ 2s ]" in output_of(out, 3), 180, "two seconds of the second cell")
    options = vault(out / ".work" / "mariadb-debian") / SYSBENCH_OPTIONS
    [sysbench] = processes_using(f"--config-file={options}")
    os.kill(sysbench, signal.SIGSEGV)
    output, _ = run.communicate(timeout=120)
    assert run.returncode == 1, output

    stalled, segfaulted = cells(out)
    flags, notes = stalled["flags"], stalled["notes"]
    assert stalled["status"] == "done" and "stall" in flags.split(","), (flags, notes)
    # The pause came as planted: most of the cell (half of it at least wholly paused, a
    # second at either end partly) ...
    assert len(paused) >= MEASURE / 2, (began, ended)
    # ... and the stall named covers its seconds, within the cell.
    stalls = [(int(a), int(b)) for a, b in re.findall(r"stall (\d+)-(\d+) s", notes)]
    covered = [(a, b) for a, b in stalls if a <= paused[0] and paused[-1] <= b <= MEASURE]
    assert covered, (list(paused), notes)
    assert "stall" in output  # the run's own summary marks it
    assert "* flagged: the report says why" in output  # and its TPS table

    assert segfaulted["status"] == "failed"
    assert "sysbench was killed by signal 11" in segfaulted["reason"]
    assert "truncated" in segfaulted["flags"].split(",")


def test_every_cell_records_the_share_of_cpu_its_client_used(first_tutorial: TutorialRun):
    """Read from the session's demo run (1 and 4 threads, both engines and workloads)."""
    demo = first_tutorial.folder / "runs" / "demo"
    found = notes_and_flags(demo)
    assert {threads for threads, *_ in found} == {1, 4}
    for threads, flags, notes, _ in found:
        share = int(notes.split("client CPU ")[1].split("%")[0])
        assert 1 <= share <= 100, (threads, notes)
        # client-bound above 90% of what the client could use (the note rounds it)
        assert share >= 90 if "client-bound" in flags.split(",") else share <= 90, (
            threads, flags, notes,
        )  # fmt: skip
