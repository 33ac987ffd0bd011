"""Reliability under load on this 2-core machine: cells end on time, errors are counted."""

import re
import sqlite3
from datetime import datetime

from oltplab.sysbench.error_codes import error_code_name
from oltplab.sysbench.reading import read_output
from tests.support.cli import oltplab
from tests.support.engines import spec_text
from tests.support.sections import section

GRACE = 60


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


def seconds_taken(cell) -> float:
    started, finished = (datetime.fromisoformat(cell[k]) for k in ("started_at", "finished_at"))
    return (finished - started).total_seconds()


def test_512_threads_end_within_the_time_limit_with_errors_counted(tmp_path):
    measure = 5
    (tmp_path / "load.toml").write_text(
        spec_text(["mysql-8.0.31", "postgresql-15"], threads=[512], measure=measure, warmup=0)
        + f"sysbench_grace_seconds = {GRACE}\n"
    )
    result = oltplab("run", "load.toml", "--results", "out", cwd=tmp_path, timeout=600)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    out = tmp_path / "out"
    rows = ended_cells(out)
    assert len(rows) == 2
    codes: dict[str, dict[str, int]] = {}
    for cell in rows:
        assert cell["status"] in ("done", "failed"), dict(cell)
        assert seconds_taken(cell) < measure + GRACE, dict(cell)
        if cell["status"] == "failed":
            assert cell["reason"], dict(cell)
            continue
        output = read_output(out / cell["artifact"])
        printed = output.summary
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


def test_a_cell_that_overruns_its_window_is_killed_at_its_limit(tmp_path):
    # Every event waits 60 s in the server: sysbench cannot stop at --time on its own.
    (tmp_path / "stuck.lua").write_text(
        'require("oltp_common")\n'
        "function prepare_statements() end\n"
        'function event() con:query("SELECT SLEEP(60)") end\n'
    )
    text = spec_text(["mariadb-10.11.5"], threads=[4], measure=2, warmup=0)
    text = text.replace('workloads = ["oltp_read_write"]', 'workloads = [{script = "stuck.lua"}]')
    (tmp_path / "s.toml").write_text(text + "sysbench_grace_seconds = 3\n")
    result = oltplab("run", "s.toml", "--results", "out", cwd=tmp_path, timeout=600)
    assert result.returncode == 1, result.stdout + result.stderr
    [cell] = ended_cells(tmp_path / "out")
    assert cell["status"] == "failed"
    assert re.search(r"sysbench did not finish within [56] s and was killed", cell["reason"])
    assert seconds_taken(cell) < 2 + 3 + 15


def test_forced_deadlocks_are_counted_by_code_in_the_report_and_the_export(tmp_path):
    """Sixteen threads of read-write transactions on ten rows: InnoDB deadlocks, sysbench
    ignores 1213 (its default list), and the gate counts every one of them by code."""
    text = spec_text(["mariadb-10.11.5"], threads=[16], measure=5, warmup=0)
    (tmp_path / "s.toml").write_text(text.replace("table_size = 2000", "table_size = 10"))
    done = oltplab("run", "s.toml", "-r", "out", "--no-telemetry", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    [cell] = ended_cells(tmp_path / "out")
    printed = read_output(tmp_path / "out" / cell["artifact"])
    assert printed.summary is not None and printed.summary.errors > 0
    assert dict(printed.ignored_errors).get("1213") == printed.summary.errors
    assert oltplab("report", "out", cwd=tmp_path).returncode == 0
    flagged = section((tmp_path / "out" / "report" / "report.md").read_text(), "Flagged")
    assert "errors (1213 deadlock: " in flagged, flagged
    assert f"1213 deadlock x{printed.summary.errors:,}" in flagged, flagged
    exported = oltplab("export", "out", "--table", "flags", cwd=tmp_path).stdout
    assert f"1213={printed.summary.errors}" in exported, exported
