"""What happens when oltplab or the engine is killed with SIGKILL in the middle of a cell."""

import hashlib
import os
import signal

from oltplab.engines.server import SYSBENCH_OPTIONS, vault
from tests.support.cli import oltplab, start_oltplab
from tests.support.engines import (
    NO_ENGINE_SUMMARY,
    cells,
    processes_using,
    run_until_second_cell,
    wait_for,
)


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_killed_run_resumes_and_does_every_cell_exactly_once(tmp_path):
    first, out = run_until_second_cell(tmp_path, measure=3)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    # The engine and sysbench die with oltplab instead of lingering on the datadir.
    cnf = str(out / ".work" / "mariadb-debian" / "my.cnf")
    wait_for(lambda: not processes_using(cnf), 30, "the engine to die with oltplab")

    # The lock died with the process: status says so, and the next run takes it at once.
    status = oltplab("status", "out", cwd=tmp_path)
    assert "interrupted (its process is gone; the next run resumes it)" in status.stdout

    before = {r["key"]: r for r in cells(out)}
    done_before = [k for k, r in before.items() if r["status"] == "done"]
    assert [before[k]["threads"] for k in done_before] == [1]
    first_file = out / before[done_before[0]]["artifact"]
    first_digest, first_finished = digest(first_file), before[done_before[0]]["finished_at"]

    # sysbench's option file, password included, outlived the kill; the next start removes
    # it before it starts the engine (sysbench writes its own again for its first cell).
    work = out / ".work" / "mariadb-debian"
    options, pid_file = vault(work) / SYSBENCH_OPTIONS, work / "mysqld.pid"
    assert "password" in options.read_text()
    killed_at, old_pid = options.stat().st_mtime, pid_file.read_text()
    second = start_oltplab("run", "s.toml", "--results", "out", *NO_ENGINE_SUMMARY, cwd=tmp_path)

    def restarted() -> bool:
        return pid_file.is_file() and pid_file.read_text() not in ("", old_pid)

    wait_for(restarted, 120, "the engine to start again")
    assert not options.exists() or options.stat().st_mtime > killed_at
    output, _ = second.communicate(timeout=300)
    assert second.returncode == 0, output
    after = {r["key"]: r for r in cells(out)}
    assert sorted(after) == sorted(before)
    assert {r["status"] for r in after.values()} == {"done"}
    assert {r["threads"]: r["attempts"] for r in after.values()} == {1: 1, 2: 2, 3: 1}
    assert digest(first_file) == first_digest
    assert after[done_before[0]]["finished_at"] == first_finished
    assert not processes_using(cnf)


def test_engine_killed_during_a_cell_fails_that_cell_and_the_matrix_goes_on(tmp_path):
    run, out = run_until_second_cell(tmp_path, measure=3)
    pid = int((out / ".work" / "mariadb-debian" / "mysqld.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    output, _ = run.communicate(timeout=300)
    assert run.returncode == 1, output
    by_threads = {r["threads"]: r for r in cells(out)}
    assert by_threads[1]["status"] == "done"
    assert by_threads[2]["status"] == "failed"
    assert "engine process killed by signal 9 during the cell" in by_threads[2]["reason"]
    assert "sysbench said: FATAL" in by_threads[2]["reason"]
    assert by_threads[3]["status"] == "done" and by_threads[3]["tps"] > 0
    assert "Failed cells" in output and "killed by signal 9" in output
    status = oltplab("status", "out", cwd=tmp_path)
    assert "killed by signal 9" in status.stdout
