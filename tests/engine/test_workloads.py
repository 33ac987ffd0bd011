"""Workloads beyond the defaults, on real engines: mixes, distributions, custom scripts.

Each run keeps its engines running from one workload to the next (order alternating), so
that an engine starts and warms up once a run, not once a workload: what is checked here
is each workload's own statements, not how a session starts. The engine summary
(pt-mysql-summary) is left out for the same reason."""

import sqlite3
from pathlib import Path

import pytest

from oltplab.spec.fields import SYSBENCH_TESTS
from tests.support.cli import oltplab
from tests.support.engines import cells, spec_text

ROOT = Path(__file__).parent.parent.parent
SCRIPTS = ROOT / "tests" / "data" / "workloads"
EXAMPLE_SCRIPT = ROOT / "examples" / "scripts" / "sum_ranges.lua"
KEPT_RUNNING = 'order = "alternating"\n'
NO_ENGINE_SUMMARY = ("--telemetry", "default,-pt-mysql-summary")


# Every built-in OLTP test, read-write with options of its own.
BUILT_IN_TESTS = (
    ", ".join(f'"{test}"' for test in SYSBENCH_TESTS if test != "oltp_read_write")
    + ', {name = "oltp_read_write", options = {point_selects = 2, range_selects = false}}'
)


def statement_counts(results: Path, engine: str, workload: str) -> dict[str, float]:
    """Statements the engine itself counted during the cell (its Com_* rates, summed)."""
    db = sqlite3.connect(f"file:{results / 'ledger.sqlite'}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT t.metric, SUM(t.value) FROM telemetry t JOIN cells c ON c.id = t.cell_id"
            " WHERE c.engine = ? AND c.workload = ? AND t.source = 'engine'"
            " AND t.metric IN ('Com_select', 'Com_update') GROUP BY t.metric",
            (engine, workload),
        )
        return dict(rows)
    finally:
        db.close()


def test_mix_presets_give_their_share_of_selects_and_updates_on_mysql_and_mariadb(tmp_path):
    (tmp_path / "mix.toml").write_text(
        spec_text(
            ["mysql-8.0.31", "mariadb-10.11.5"],
            threads=[2],
            measure=3,
            warmup=0,
            workloads=("read-intensive", "balanced", "write-intensive"),
        )
        + KEPT_RUNNING
    )
    result = oltplab("run", "mix.toml", "--results", "out", *NO_ENGINE_SUMMARY, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    out = tmp_path / "out"
    rows = cells(out)
    assert {(r["workload"], r["scenario"], r["status"]) for r in rows} == {
        ("read-intensive", "read-intensive-local", "done"),
        ("balanced", "balanced-local", "done"),
        ("write-intensive", "write-intensive-local", "done"),
    }
    for engine in ("mysql-8.0.31", "mariadb-10.11.5"):
        for workload, reads in (("read-intensive", 80), ("balanced", 50), ("write-intensive", 20)):
            counts = statement_counts(out, engine, workload)
            selects, updates = counts["Com_select"], counts["Com_update"]
            assert selects + updates > 500, (engine, workload, counts)
            measured = 100 * selects / (selects + updates)
            assert abs(measured - reads) <= 5, (engine, workload, measured)

    report = oltplab("report", "out", "--compare", "mysql-8.0.31", cwd=tmp_path)
    assert report.returncode == 0, report.stdout + report.stderr
    text = (out / "report" / "report.md").read_text()
    for title in (
        "### balanced, local (50% point selects / 50% index updates)",
        "**QPS, read-intensive-local, tier 128M**",
        "**QPS improvement of mysql-8.0.31, write-intensive-local, tier 128M**",
    ):
        assert title in text, title


def test_distributions_and_a_custom_script_are_workloads_of_their_own(tmp_path):
    (tmp_path / "mine.lua").write_text(EXAMPLE_SCRIPT.read_text())
    workloads = (
        '["oltp_read_write", {test = "oltp_read_write", rand_type = "pareto", '
        'rand_pareto_h = 0.3}, {script = "mine.lua", read_only = true, options = {sums = 3}}]'
    )
    text = spec_text(["mariadb-10.11.5"], threads=[1], measure=2, warmup=0) + KEPT_RUNNING
    text = text.replace('workloads = ["oltp_read_write"]', f"workloads = {workloads}")
    (tmp_path / "w.toml").write_text(text)
    result = oltplab("run", "w.toml", "--results", "out", *NO_ENGINE_SUMMARY, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    out = tmp_path / "out"
    rows = cells(out)
    assert {(r["workload"], r["scenario"]) for r in rows if r["status"] == "done"} == {
        ("oltp_read_write", "rw-local"),
        ("oltp_read_write-pareto", "oltp_read_write-pareto-local"),
        ("mine", "mine-local"),
    }
    log = (out / "oltplab.log").read_text()
    assert "--rand-type=pareto --rand-pareto-h=0.3" in log
    assert f"{tmp_path / 'mine.lua'} " in log and "--sums=3" in log
    # The script's own work: 3 SUM() queries per event, nothing else.
    mine = (out / "benchmark_logs_mine").rglob("Tier128M_RO_1th.sysbench.txt")
    summary = next(mine).read_text()
    reads = int(summary.split("read:")[1].split()[0])
    events = int(summary.split("transactions:")[1].split()[0])
    assert reads == 3 * events

    run_json = (out / "run.json").read_text()
    assert '"script_sha256"' in run_json and '"rand_type": "pareto"' in run_json

    report = oltplab("report", "out", cwd=tmp_path)
    assert report.returncode == 0, report.stdout + report.stderr
    md = (out / "report" / "report.md").read_text()
    assert "### Read-write, local" in md
    assert "### oltp_read_write-pareto, local (oltp_read_write, pareto h=0.3)" in md
    assert "### mine, local (script mine.lua" in md


def test_a_broken_script_is_refused_with_one_line_naming_it(tmp_path):
    (tmp_path / "broken.lua").write_text((SCRIPTS / "broken.lua").read_text())
    text = spec_text(["mariadb-10.11.5"], threads=[1], measure=3)
    text = text.replace('workloads = ["oltp_read_write"]', 'workloads = [{script = "broken.lua"}]')
    (tmp_path / "b.toml").write_text(text)
    result = oltplab("run", "b.toml", "--results", "out", cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines == [
        f"error: b.toml: workloads[0] (broken): sysbench cannot load {tmp_path / 'broken.lua'}: "
        "line 5: ')' expected near '('"
    ], result.stderr
    assert not (tmp_path / "out").exists()  # refused before anything was provisioned


@pytest.mark.parametrize("engine", ["mariadb-10.11.5", "postgresql-15"])
def test_every_built_in_oltp_test_runs_with_its_options(tmp_path, engine):
    # One second a cell: each test runs, with its options; what it measures is no subject.
    text = spec_text([engine], threads=[2], measure=1, warmup=0) + KEPT_RUNNING
    text = text.replace('workloads = ["oltp_read_write"]', f"workloads = [{BUILT_IN_TESTS}]")
    (tmp_path / "all.toml").write_text(text)
    result = oltplab("run", "all.toml", "--results", "out", *NO_ENGINE_SUMMARY, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = cells(tmp_path / "out")
    assert {r["workload"] for r in rows if r["status"] == "done"} == set(SYSBENCH_TESTS)
    log = (tmp_path / "out" / "oltplab.log").read_text()
    assert "--point_selects=2 --range_selects=off" in log
