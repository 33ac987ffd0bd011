"""A matrix end to end on MySQL and MariaDB: tiers, its raw files, the ledger, export,
report, status, resume and import; a tier whose setting does not take. What the
read-only workload's sessions add (their own logs folder, no read-write warm-up) is read
from the session's demo run, which measures both workloads."""

import csv
import io
import json

import pytest

from oltplab.analysis.dataset import load
from oltplab.analysis.points import Points
from oltplab.analysis.precision import answers
from oltplab.base.metrics import TPS, Target
from oltplab.engines.server import BENCH_SECRET, vault
from tests.support.cli import oltplab
from tests.support.engines import cells, spec_text
from tests.support.tutorial import TutorialRun, pattern, printed

# The engine summary (pt-mysql-summary) is no subject here: 2-5 s a session saved. The
# demo's summaries are checked for the secret below.
NO_ENGINE_SUMMARY = ("--telemetry", "default,-pt-mysql-summary")


@pytest.mark.fresh_engines  # it counts the datasets prepared: once per engine
def test_two_engines_two_tiers_end_to_end(tmp_path):
    tiers = (
        '[[tiers]]\nname = "128M"\nbuffer_pool = "128M"\n'
        '[[tiers]]\nname = "256M"\nbuffer_pool = "256M"\n'
    )
    (tmp_path / "m.toml").write_text(
        spec_text(["mysql-8.0.31", "mariadb-10.11.5"], threads=[1], measure=2, extra=tiers)
    )
    run = ("run", "m.toml", "--results", "out", *NO_ENGINE_SUMMARY)
    result = oltplab(*run, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    out = tmp_path / "out"
    rows = cells(out)
    assert len(rows) == 2 * 2
    # One repetition decides nothing: the run says so of every comparison a --margin run
    # would decide here (those with a steady part to compare; 2-second cells on a busy host
    # may have none) and names that run.
    said = " ".join(result.stderr.split())
    comparisons = len(answers(Points(load([out]), measure=TPS), Target(5.0, TPS)))
    if comparisons:
        assert f"note: {comparisons} of {comparisons} comparison" in said, said
        assert "undecided at ±5%" in said and "`oltplab run m.toml --margin 5%`" in said
    else:
        assert "undecided at" not in said, said
    assert {r["status"] for r in rows} == {"done"}
    assert all(r["tps"] > 0 for r in rows)
    versions = {r["engine"]: r["server_version"] for r in rows}
    assert versions["mysql-8.0.31"] == "8.0.31"
    assert versions["mariadb-10.11.5"].startswith("10.11.5-MariaDB")

    mysql = out / "benchmark_logs" / "mysql" / "8.0.31"
    for name in (
        "Tier128M_RW_1th.sysbench.txt",
        "Tier256M_RW_1th.sysbench.txt",
        "Tier128M_RW.cnf.txt",
        "Tier128M_RW.vars.txt",
        "Tier128M_RW.errlog.txt",
        "Tier256M_RW_1th.status.txt",
        "Tier128M_RW_warmupA.sysbench.txt",
        "Tier128M_RW_warmupB.sysbench.txt",
    ):
        assert (mysql / name).is_file(), name
    assert "innodb_buffer_pool_size\t268435456" in (mysql / "Tier256M_RW.vars.txt").read_text()
    assert "innodb_redo_log_capacity" in (mysql / "Tier128M_RW.cnf.txt").read_text()
    mariadb_cnf = next((out / "benchmark_logs" / "mariadb").glob("*/Tier128M_RW.cnf.txt"))
    assert "innodb_redo_log_capacity" not in mariadb_cnf.read_text()

    log = (out / "oltplab.log").read_text()
    assert log.count(" prepare (") == 2  # data prepared once per engine, not per tier
    # sysbench gets its connection from an option file: the log shows where it connects.
    assert "--config-file=" in log and "(mysql sbtest@127.0.0.1:" in log
    secret = (vault(out / ".work" / "mysql-8.0.31") / BENCH_SECRET).read_text()
    for path in out.rglob("*.txt"):
        assert secret not in path.read_text(errors="replace"), path
    assert secret not in log

    exported = oltplab("export", "out", "--format", "csv", cwd=tmp_path)
    table = list(csv.DictReader(io.StringIO(exported.stdout)))
    assert len(table) == 4
    assert list(table[0]) == [
        *("scenario", "family", "version", "engine", "tier", "workload", "threads"),
        *("repetition", "status", "tps", "tps_ci_low", "tps_ci_high", "tps_whole_run", "qps"),
        *("reads_per_s", "writes_per_s", "other_per_s", "lat_avg_ms", "lat_p95_ms"),
        *("lat_max_ms", "errors_per_s", "error_rate", "reconnects_per_s", "duration_s"),
        *("interval_s", "ignored_errors", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p99_9_ms"),
        "max_ms",
        *("offered_tps", "achieved_tps", "saturated", "cpu_us_per_txn", "cpu_us_per_txn_ci_low"),
        *("cpu_us_per_txn_ci_high", "flags", "cv", "steady_from_s", "notes", "machine"),
    ]
    assert {r["scenario"] for r in table} == {"rw-local"}
    assert {r["tier"] for r in table} == {"128M", "256M"}
    assert {r["version"] for r in table} == {"8.0.31", "10.11.5"}
    as_json = json.loads(oltplab("export", "out", "--format", "json", cwd=tmp_path).stdout)
    assert len(as_json) == 4 and as_json[0]["status"] == "done"

    report = oltplab("report", "out", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    markdown = (out / "report" / "report.md").read_text()
    for section in (
        "1. Environment",
        "2. Configuration",
        "3. Results",
        "4. Version progression",
        "5. All significant differences",
        "6. Key findings",
        "7. Relative throughput",
        "8. Stability",
        "9. Pairwise comparison",
        "10. Flagged",
    ):
        assert f"## {section}" in markdown
    assert "| mysql-8.0.31 | mysql | 8.0.31 | 8.0.31 |" in markdown
    assert "**innodb_buffer_pool_size**" not in markdown  # equal across engines per tier
    # One 2-second run a point cannot tell the engines apart, and the finding says so,
    # unless other load on the machine flagged one engine's cells, which the findings then
    # leave out (listed below them): nothing is left to compare.
    left_out = markdown.partition("Left out of these findings")[2].partition("\n## ")[0]
    flagged = any(f"| rw-local | {e} | 128M |" in left_out for e in versions)
    assert "| No clear leader | rw-local | 128M |" in markdown or flagged, markdown
    assert "| Leader |" not in markdown
    assert (out / "report" / "report.html").is_file()
    assert (out / "report" / "charts" / "tps_rw-local_256M.png").is_file()

    status = oltplab("status", "out", cwd=tmp_path)
    assert status.returncode == 0, status.stdout + status.stderr
    # done, failed, pending, running, total
    assert pattern("Cells done failed pending running total 4 0 0 0 4").search(
        printed(status.stdout)
    ), status.stdout

    again = oltplab(*run, cwd=tmp_path)
    assert again.returncode == 0
    assert [r["finished_at"] for r in cells(out)] == [r["finished_at"] for r in rows]

    # The run's own raw files, imported again, are the same engines, cells and figures;
    # the warm-ups are recognised as warm-ups, the scratch directory is not results.
    imported = oltplab("import", "out", "-r", "again", cwd=tmp_path)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    said = " ".join(imported.stdout.split())
    assert "warm-up output(s) recognised" in said and "not imported" not in said
    assert not imported.stderr.strip(), imported.stderr

    def figures(results: str) -> dict[tuple, tuple]:
        exported = oltplab("export", results, "--format", "json", cwd=tmp_path)
        return {
            (r["engine"], r["scenario"], r["tier"], r["threads"], r["repetition"]): (
                r["tps"], r["tps_ci_low"], r["tps_ci_high"], r["tps_whole_run"], r["qps"],
                r["lat_p95_ms"], r["steady_from_s"],
            )
            for r in json.loads(exported.stdout)
        }  # fmt: skip

    original = figures("out")
    assert len(original) == 4 and figures("again") == original


def test_the_demo_s_read_only_sessions_have_their_own_logs_and_no_read_write_warm_up(
    first_tutorial: TutorialRun,
):
    """The session's demo (both workloads, both engines, engine summaries on) only read:
    the read-only workload's raw files in a folder of their own, warmed up without
    writes; and the benchmark account's secret in none of the files, the engine summaries
    (pt-mysql-summary) included."""
    demo = first_tutorial.folder / "runs" / "demo"
    read_only = demo / "benchmark_logs_read_only" / "mysql" / "8.0.31"
    assert (read_only / "Tier128M_RO_1th.sysbench.txt").is_file()
    assert (read_only / "Tier128M_RO_warmupA.sysbench.txt").is_file()
    assert not (read_only / "Tier128M_RO_warmupB.sysbench.txt").exists()  # no RW warm-up
    assert {r["scenario"] for r in cells(demo)} == {"rw-local", "ro-local"}
    summaries = list(demo.rglob("*.pt-mysql-summary.txt"))
    assert summaries
    for engine in ("mysql-8.0.31", "mariadb-10.11.5"):
        secret = (vault(demo / ".work" / engine) / BENCH_SECRET).read_text()
        for path in demo.rglob("*.txt"):
            assert secret not in path.read_text(errors="replace"), path
        assert secret not in (demo / "oltplab.log").read_text()


def test_a_tier_whose_setting_does_not_take_is_aborted_with_intended_and_actual(tmp_path):
    tiers = (
        '[[tiers]]\nname = "200M"\nbuffer_pool = "200M"\n'
        '[[tiers]]\nname = "128M"\nbuffer_pool = "128M"\n'
    )
    (tmp_path / "m.toml").write_text(
        spec_text(["mysql-8.0.31"], threads=[1], measure=2, extra=tiers, warmup=0)
    )
    result = oltplab("run", "m.toml", "--results", "out", *NO_ENGINE_SUMMARY, cwd=tmp_path)
    assert result.returncode == 1
    by_tier = {r["tier"]: r for r in cells(tmp_path / "out")}
    assert by_tier["200M"]["status"] == "failed"
    assert by_tier["200M"]["reason"].startswith(
        "engine mysql-8.0.31 tier 200M: innodb_buffer_pool_size intended 209715200, "
        "actual 268435456"
    )
    assert by_tier["128M"]["status"] == "done"
    assert "Failed cells" in result.stdout
