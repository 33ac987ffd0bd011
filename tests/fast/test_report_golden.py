"""Golden test through the command line: import, report and export a known tree."""

import json

import pytest

from tests.support.cli import oltplab
from tests.support.golden import build_tree
from tests.support.sections import section


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("golden")
    build_tree(root / "benchmark_data")
    first = oltplab("import", "benchmark_data", "--results", "res", cwd=root)
    assert first.returncode == 0, first.stderr
    assert "19 cell(s) imported, 0 updated, 0 unchanged" in first.stdout
    report = oltplab("report", "res", cwd=root)
    assert report.returncode == 0, report.stderr
    return root


def block(markdown: str, heading: str, lines: int) -> str:
    start = markdown.index(heading)
    return "\n".join(markdown[start:].splitlines()[:lines])


def test_reimport_changes_nothing(workspace):
    again = oltplab("import", "benchmark_data", "--results", "res", cwd=workspace)
    assert "0 cell(s) imported, 0 updated, 19 unchanged" in again.stdout


def test_report_tables_are_exact(workspace):
    md = (workspace / "res" / "report" / "report.md").read_text()
    assert (
        block(md, "**TPS by thread count, tier 2G (rw-local)**", 7)
        == """\
**TPS by thread count, tier 2G (rw-local)**

| Engine | 1t | 4t |
|---|---|---|
| mariadb-10.11.16 | 120 | failed |
| mysql-5.7.44 | 100 | 300 |
| mysql-8.0.45 | 110 | 270 |"""
    )
    assert (
        block(md, "**TPS by thread count, tier 8G (rw-local)**", 7)
        == """\
**TPS by thread count, tier 8G (rw-local)**

| Engine | 1t | 4t |
|---|---|---|
| mariadb-10.11.16 | 250 | 400 † |
| mysql-5.7.44 | 200 | 500 |
| mysql-8.0.45 | 190 | 620 |"""
    )
    assert (
        block(md, "**mysql, tier 8G, rw-local: baseline mysql-5.7.44**", 9)
        == """\
**mysql, tier 8G, rw-local: baseline mysql-5.7.44**

| Engine | 1t | 4t |
|---|---|---|
| mysql-5.7.44 (TPS) | 200 | 500 |
| mysql-8.0.45 (TPS) | 190 | 620 |
| vs mysql-5.7.44 | -5.0% [-5.0, -5.0] | +24.0% [+24.0, +24.0] |
| verdict | significant | significant |
| whole run vs mysql-5.7.44 | -5.0% | +24.0% |"""
    )
    assert (
        block(md, "### Read-write, local\n\n| Comparison", 7)
        == """\
### Read-write, local

| Comparison | Tier | Thread count | Difference vs baseline [95% interval] | Whole run | n |
|---|---|---|---|---|---|
| mysql-8.0.45 vs mysql-5.7.44 | 2G | 1 | +10.0% [+10.0, +10.0] | +10.0% | 30 |
| mysql-8.0.45 vs mysql-5.7.44 | 2G | 4 | -10.0% [-10.0, -10.0] | -10.0% | 30 |
| mysql-8.0.45 vs mysql-5.7.44 | 8G | 4 | +24.0% [+24.0, +24.0] | +24.0% | 30 |"""
    )
    assert (
        "| Leader | rw-local | 2G | mysql-5.7.44 | peak 300 TPS at 4 threads, +11.1% ahead "
        "of mysql-8.0.45 (270 TPS) |"
    ) in md
    assert (
        "| Buffer pool lever | rw-local | 8G/2G | mysql-8.0.45 | peak 620 TPS at 8G vs 270 "
        "at 2G, 2.30x whole run; steady 2.30x [2.30x, 2.30x] |" in md
    )
    assert "| 8G | redo capacity | mysql-5.7.44: 2G; mysql-8.0.45: 4G |" in md
    assert (
        block(
            md, "| Scenario | Engine | Tier | Threads | Run | Status | Flags | Reason | Notes |", 5
        )
        == """\
| Scenario | Engine | Tier | Threads | Run | Status | Flags | Reason | Notes |
|---|---|---|---|---|---|---|---|---|
| rw-local | mariadb-10.11.16 | 2G | 4 | 1 | failed | empty | empty file |  |
| rw-local | mariadb-10.11.16 | 8G | 4 | 1 | done | errors (0.5% of transactions) |  |  |
| ro-local | mariadb-10.11.16 | 8G | 4 | 1 | failed | truncated | no summary: the output is truncated |  |"""
    )
    for number in range(1, 11):
        assert f"\n## {number}. " in md
    charts = sorted(p.name for p in (workspace / "res" / "report" / "charts").iterdir())
    assert "tps_rw-local_8G.png" in charts and "relative_ro-local_8G.png" in charts
    assert (workspace / "res" / "report" / "report.html").stat().st_size > 1_000_000


def test_exports_are_exact(workspace):
    def export(*args):
        result = oltplab("export", "res", *args, cwd=workspace)
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert (
        export("--table", "progression")
        == """\
scenario,tier,family,baseline_version,version,threads,tps,baseline_tps,diff_pct,ci_low_pct,ci_high_pct,verdict,n,method,tps_whole_run,baseline_tps_whole_run,whole_run_diff_pct,machines
rw-local,2G,mysql,5.7.44,8.0.45,1,110.0,100.0,10.0,10.0,10.0,significant,30,long-run variance over seconds,110.0,100.0,10.0,
rw-local,2G,mysql,5.7.44,8.0.45,4,270.0,300.0,-10.0,-10.0,-10.0,significant,30,long-run variance over seconds,270.0,300.0,-10.0,
rw-local,8G,mysql,5.7.44,8.0.45,1,190.0,200.0,-5.0,-5.0,-5.0,significant,30,long-run variance over seconds,190.0,200.0,-5.0,
rw-local,8G,mysql,5.7.44,8.0.45,4,620.0,500.0,24.0,24.0,24.0,significant,30,long-run variance over seconds,620.0,500.0,24.0,
ro-local,8G,mysql,5.7.44,8.0.45,1,420.0,400.0,5.0,5.0,5.0,significant,30,long-run variance over seconds,420.0,400.0,5.0,
ro-local,8G,mysql,5.7.44,8.0.45,4,900.0,1000.0,-10.0,-10.0,-10.0,significant,30,long-run variance over seconds,900.0,1000.0,-10.0,
"""
    )
    differences = json.loads(export("--table", "differences", "--format", "json"))
    assert [(d["scenario"], d["tier"], d["threads"], d["diff_pct"]) for d in differences] == [
        ("rw-local", "2G", 1, 10.0),
        ("rw-local", "2G", 4, -10.0),
        ("rw-local", "8G", 4, 24.0),
        ("ro-local", "8G", 4, -10.0),
    ]
    wider = json.loads(export("--table", "differences", "--format", "json", "--margin", "20"))
    assert [d["diff_pct"] for d in wider] == [24.0]
    assert (
        export("--table", "flags")
        == """\
scenario,engine,tier,workload,threads,repetition,status,flags,error_rate,ignored_errors,reason,notes
rw-local,mariadb-10.11.16,2G,oltp_read_write,4,1,failed,empty,,,empty file,
rw-local,mariadb-10.11.16,8G,oltp_read_write,4,1,done,errors,0.005,,,
ro-local,mariadb-10.11.16,8G,oltp_read_only,4,1,failed,truncated,,,no summary: the output is truncated,
"""
    )
    findings = export("--table", "findings").splitlines()
    assert findings[0] == "kind,scenario,tier,engine,value,detail"
    assert (
        'leader,rw-local,8G,mysql-8.0.45,620.0,"peak 620 TPS at 4 threads, +24.0% ahead of '
        'mysql-5.7.44 (500 TPS)"' in findings
    )
    summary = export("--table", "summary").splitlines()
    assert len(summary) == 1 + 19
    assert summary[0].startswith(
        "scenario,family,version,engine,tier,workload,threads,repetition,status,"
        "tps,tps_ci_low,tps_ci_high,tps_whole_run,qps,"
    )
    assert summary[0].endswith(",flags,cv,steady_from_s,notes,machine")
    # a constant 30 s series: its interval is the value itself, its jitter zero, no cut
    assert summary[1] == (
        "rw-local,mariadb,10.11.16,mariadb-10.11.16,2G,oltp_read_write,1,1,"
        "done,120.0,120.0,120.0,120.0,2400.0,1680.0,480.0,240.0,5.0,9.0,40.0,0.0,0.0,0.0,30.0,"
        "1.0,,,,,,,,,,,,,,,0.0,1,,"
    )
    assert "rw-local,mysql,8.0.45,mysql-8.0.45,8G,oltp_read_write,4,2,done,640.0" in "\n".join(
        summary
    )


def test_pairwise_tables_for_chosen_engines(workspace):
    oltplab(
        "report",
        "res",
        "-o",
        "chosen",
        "--compare",
        "mysql-8.0.45",
        "--compare",
        "mysql-5.7.44",
        cwd=workspace,
    )
    md = (workspace / "chosen" / "report.md").read_text()
    assert section(md, "Pairwise comparison: mysql-8.0.45 against mysql-5.7.44")
    assert (
        block(md, "**QPS improvement of mysql-8.0.45, rw-local, tier 8G**", 9)
        == """\
**QPS improvement of mysql-8.0.45, rw-local, tier 8G**

Steady QPS with its 95% interval, and the whole-run QPS difference.

| Threads | vs mysql-5.7.44 | vs mysql-5.7.44, whole-run QPS |
|---|---|---|
| 1 | -5.0% [-5.0, -5.0] | -5.0% |
| 4 | +24.0% [+24.0, +24.0] | +24.0% |
| **Average** | +9.5% |  |"""
    )


def test_bad_import_source_and_baseline_are_one_line_errors(workspace):
    missing = oltplab("import", "nowhere", "--results", "x", cwd=workspace)
    assert missing.returncode == 2 and "nowhere: no such directory" in missing.stderr
    (workspace / "stray").mkdir()
    stray = oltplab("import", "stray", "--results", "x", cwd=workspace)
    assert stray.returncode == 2 and "nothing imported: no sysbench outputs here" in stray.stderr
    baseline = oltplab("report", "res", "--baseline", "mysql-9", cwd=workspace)
    assert baseline.returncode == 2
    assert baseline.stderr.strip().splitlines() == [
        "error: --baseline mysql-9: no such engine in these results (mariadb-10.11.16, "
        "mysql-5.7.44, mysql-8.0.45)"
    ]


def test_a_fixed_cut_replaces_the_detected_one(workspace):
    result = oltplab("export", "res", "--table", "summary", "--cut-seconds", "8", cwd=workspace)
    rows = result.stdout.splitlines()
    assert rows[1].endswith(",0.0,9,,")  # steady from second 9: the first after the cut
    report = oltplab("report", "res", "-o", "cut", "--cut-seconds", "8", cwd=workspace)
    assert "a fixed 8 s, --cut-seconds" in (workspace / "cut" / "report.md").read_text()
    assert report.returncode == 0
