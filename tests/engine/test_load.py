"""Reliability under load on this 2-core machine: cells end on time, errors are counted.

"On time" is the runner's own limit (the measurement and sysbench_grace_seconds): a
sysbench still running then is killed and its cell fails saying so. How long a cell took
on the wall clock is the host's, which other load may stretch; it is not checked."""

import re
import sqlite3
import subprocess
from pathlib import Path

import pytest

from oltplab.store.scratch import SNAPSHOTS_ENV
from oltplab.sysbench.error_codes import error_code_name
from oltplab.sysbench.reading import read_output
from tests.support.cli import oltplab
from tests.support.engines import spec_text
from tests.support.sections import section

GRACE = 60
# The engine summary (pt-mysql-summary) is no subject here: 2-5 s a session saved.
NO_ENGINE_SUMMARY = ("--telemetry", "default,-pt-mysql-summary")
KILLED = re.compile(r"sysbench did not finish within (\d+) s and was killed")


def ended_cells(results):
    db = sqlite3.connect(f"file:{results / 'ledger.sqlite'}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        return list(
            db.execute(
                "SELECT c.*, s.errors, s.tps FROM cells c LEFT JOIN summaries s"
                " ON s.cell_id = c.id ORDER BY c.id"
            )
        )
    finally:
        db.close()


def test_512_threads_end_within_the_time_limit_with_errors_counted(tmp_path):
    measure = 3
    (tmp_path / "load.toml").write_text(
        spec_text(["mysql-8.0.31", "postgresql-15"], threads=[512], measure=measure, warmup=0)
        + f"sysbench_grace_seconds = {GRACE}\n"
    )
    run = ("run", "load.toml", "--results", "out", *NO_ENGINE_SUMMARY)
    result = oltplab(*run, cwd=tmp_path, timeout=600)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    out = tmp_path / "out"
    rows = ended_cells(out)
    assert len(rows) == 2
    codes: dict[str, dict[str, int]] = {}
    for cell in rows:
        assert cell["status"] in ("done", "failed"), dict(cell)
        if cell["status"] == "failed":
            # Said why; a sysbench still running at the limit was killed there, and says so.
            assert cell["reason"], dict(cell)
            killed = KILLED.search(cell["reason"])
            assert killed is None or int(killed[1]) >= measure + GRACE, dict(cell)
            continue
        # Done: sysbench ended on its own, within the limit, its summary printed.
        output = read_output(out / cell["artifact"])
        printed = output.summary
        assert printed is not None, dict(cell)
        assert cell["errors"] == printed.errors  # every ignored error counted, none dropped
        assert ("errors" in cell["flags"].split(",")) == (printed.errors > 0)
        # ... and by code: every error sysbench ignored went through the gate's count
        # (a lost connection it reconnected after is an ignored error too).
        by_code = dict(output.ignored_errors)
        assert sum(by_code.values()) == printed.errors, (by_code, printed)
        codes[cell["engine"]] = by_code
    # The codes in the report's flagged cells and in the export, named.
    assert oltplab("report", "out", cwd=tmp_path).returncode == 0
    flagged = section((out / "report" / "report.md").read_text(), "Flagged and failed cells")
    exported = oltplab("export", "out", "--table", "flags", cwd=tmp_path).stdout
    for engine, by_code in codes.items():
        if by_code:
            top = max(by_code, key=lambda code: by_code[code])
            assert f"{top}=" in exported and f" x{by_code[top]:,}" in flagged, (engine, by_code)
            assert f"errors ({error_code_name(top)}: " in flagged, flagged
    # max_connections comes from the thread list: 512 + 32 for the probe and control.
    for vars_file in out.glob("benchmark_logs/*/*/Tier128M_RW.vars.txt"):
        assert "max_connections\t544\n" in vars_file.read_text(), vars_file


MEASURE, GRACE_STUCK = 3, 3


@pytest.fixture(scope="module")
def deadlocks_then_stuck(
    tmp_path_factory: pytest.TempPathFactory, shared_snapshots: Path
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One run on MariaDB, the engine kept running from one workload to the next, for two
    tests: sixteen threads of read-write transactions on ten rows (they deadlock), then a
    script whose every event waits 60 s in the server (sysbench cannot stop at --time on
    its own)."""
    folder = tmp_path_factory.mktemp("deadlocks-then-stuck")
    (folder / "stuck.lua").write_text(
        'require("oltp_common")\n'
        "function prepare_statements() end\n"
        'function event() con:query("SELECT SLEEP(60)") end\n'
    )
    text = spec_text(["mariadb-10.11.5"], threads=[16], measure=MEASURE, warmup=0)
    text = text.replace("table_size = 2000", "table_size = 10").replace(
        'workloads = ["oltp_read_write"]', 'workloads = ["oltp_read_write", {script = "stuck.lua"}]'
    )
    (folder / "s.toml").write_text(
        text + f'order = "alternating"\nsysbench_grace_seconds = {GRACE_STUCK}\n'
    )
    with pytest.MonkeyPatch.context() as env:  # the session's datasets, as every test's
        env.setenv(SNAPSHOTS_ENV, str(shared_snapshots))
        done = oltplab("run", "s.toml", "-r", "out", "--no-telemetry", cwd=folder, timeout=600)
    return folder, done


def test_a_cell_that_overruns_its_window_is_killed_at_its_limit(deadlocks_then_stuck):
    folder, done = deadlocks_then_stuck
    assert done.returncode == 1, done.stdout + done.stderr  # the stuck cell failed
    [cell] = [c for c in ended_cells(folder / "out") if c["workload"] == "stuck"]
    assert cell["status"] == "failed"
    # Killed once its limit had passed (by the runner's clock, which says when), and long
    # before its first event could end: not left to run its course.
    killed = KILLED.search(cell["reason"])
    assert killed and MEASURE + GRACE_STUCK <= int(killed[1]) < 60, cell["reason"]


def test_forced_deadlocks_are_counted_by_code_in_the_report_and_the_export(deadlocks_then_stuck):
    """Sixteen threads of read-write transactions on ten rows: InnoDB deadlocks, sysbench
    ignores 1213 (its default list), and the gate counts every one of them by code."""
    folder, done = deadlocks_then_stuck
    [cell] = [c for c in ended_cells(folder / "out") if c["workload"] == "oltp_read_write"]
    assert cell["status"] == "done", done.stdout + done.stderr
    printed = read_output(folder / "out" / cell["artifact"])
    assert printed.summary is not None and printed.summary.errors > 0
    assert dict(printed.ignored_errors).get("1213") == printed.summary.errors
    assert oltplab("report", "out", cwd=folder).returncode == 0
    flagged = section((folder / "out" / "report" / "report.md").read_text(), "Flagged")
    assert "errors (1213 deadlock: " in flagged, flagged
    assert f"1213 deadlock x{printed.summary.errors:,}" in flagged, flagged
    exported = oltplab("export", "out", "--table", "flags", cwd=folder).stdout
    assert f"1213={printed.summary.errors}" in exported, exported
