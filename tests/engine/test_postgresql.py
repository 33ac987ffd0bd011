"""PostgreSQL as a private instance, measured like the MySQL family and reported beside it."""

import os
import signal
import sqlite3
from pathlib import Path

from oltplab.engines.server import BENCH_SECRET, vault
from oltplab.spec import load_spec
from tests.support.cli import oltplab, start_oltplab
from tests.support.engines import cells, processes_using, spec_text, wait_for
from tests.support.sections import section

DEMO = Path(__file__).parent.parent.parent / "src" / "oltplab" / "spec" / "demo.toml"


def test_postgresql_runs_the_demo_workloads_next_to_the_mysql_family(tmp_path, browser_page):
    demo = load_spec(DEMO)
    text = DEMO.read_text().replace(
        '[[engines]]\nname = "mariadb-10.11.5"\n',
        '[[engines]]\nname = "mariadb-10.11.5"\n\n[[engines]]\nname = "postgresql-15"\n',
    )
    # The demo's workloads, threads and dataset; shorter windows keep the suite quick.
    text = text.replace(f"measure_seconds = {demo.protocol.measure_seconds}", "measure_seconds = 2")
    assert "measure_seconds = 2" in text
    (tmp_path / "demo-pg.toml").write_text(text)
    result = oltplab("run", "demo-pg.toml", "--results", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    out = tmp_path / "out"
    rows = cells(out)
    postgres = [r for r in rows if r["engine"] == "postgresql-15"]
    assert {r["workload"] for r in postgres} == {w.name for w in demo.workloads}
    assert {r["threads"] for r in postgres} == set(demo.protocol.threads)
    assert {r["status"] for r in rows} == {"done"} and all(r["tps"] > 0 for r in postgres)
    assert postgres[0]["server_version"].startswith("15.")

    folder = next((out / "benchmark_logs" / "postgresql").iterdir())
    cnf = (folder / "Tier128M_RW.cnf.txt").read_text()
    assert "shared_buffers = '131072kB'" in cnf and "max_wal_size = '128MB'" in cnf
    live = (folder / "Tier128M_RW.vars.txt").read_text()
    assert "shared_buffers\t134217728\n" in live and "synchronous_commit\ton\n" in live
    assert "(pgsql sbtest@127.0.0.1:" in (out / "oltplab.log").read_text()

    db = sqlite3.connect(f"file:{out / 'ledger.sqlite'}?mode=ro", uri=True)
    commits = db.execute(
        "SELECT AVG(t.value) FROM telemetry t JOIN cells c ON c.id = t.cell_id"
        " WHERE c.engine = 'postgresql-15' AND t.metric = 'pg_stat_database.xact_commit'"
        " AND c.workload = 'oltp_read_write'"
    ).fetchone()[0]
    # The probe reads the benchmark database's own tables: their dead tuples, which the
    # adaptive rule watches as InnoDB's history list, pile up as rows are updated.
    dead = db.execute(
        "SELECT MAX(t.value) FROM telemetry t JOIN cells c ON c.id = t.cell_id"
        " WHERE c.engine = 'postgresql-15' AND t.metric = 'pg_stat_user_tables.n_dead_tup'"
        " AND c.workload = 'oltp_read_write'"
    ).fetchone()[0]
    # ... and its checkpoint age: WAL written since the redo point, which rows written grow.
    age = db.execute(
        "SELECT MAX(t.value) FROM telemetry t JOIN cells c ON c.id = t.cell_id"
        " WHERE c.engine = 'postgresql-15' AND t.metric = 'checkpoint_age'"
        " AND c.workload = 'oltp_read_write'"
    ).fetchone()[0]
    db.close()
    assert commits > 0  # the engine probe reads PostgreSQL's statistics views
    assert dead is not None and dead > 0, dead
    assert age is not None and age > 0, age

    secret = (vault(out / ".work" / "postgresql-15") / BENCH_SECRET).read_text()
    for path in out.rglob("*"):
        if path.is_file() and ".work" not in path.parts:
            assert secret.encode() not in path.read_bytes(), path

    report = oltplab("report", "out", cwd=tmp_path)
    assert report.returncode == 0, report.stdout + report.stderr
    md = (out / "report" / "report.md").read_text()
    results = section(md, "Results by scenario and tier")
    read_write = results.split("### Read-write, local")[1].split("### Read-only, local")[0]
    for engine in ("mysql-8.0.31", "mariadb-10.11.5", "postgresql-15"):
        assert f"| {engine} |" in read_write, engine
    assert "Cross-family comparison (MySQL-family vs PostgreSQL)" in results
    assert "| shared_buffers | - | - | 128M |" in md
    assert not processes_using(str(out / ".work" / "postgresql-15"))

    page, errors = browser_page
    page.goto((out / "report" / "report.html").as_uri())
    page.wait_for_selector("#chart .main-svg")
    note = page.locator("#cross-family")
    assert note.is_visible()
    assert note.text_content().startswith("Cross-family comparison (MySQL-family vs PostgreSQL)")
    assert page.locator("#scenario option").first.text_content() == "Read-write, local"
    page.locator("#engines input[value='postgresql-15']").uncheck()
    assert not note.is_visible()  # MySQL and MariaDB alone are one family
    assert errors == []


def test_a_tier_postgresql_refuses_fails_its_cells_with_the_servers_reason(tmp_path):
    tiers = (
        '[[tiers]]\nname = "good"\nbuffer_pool = "128M"\n'
        '[[tiers]]\nname = "bad"\nbuffer_pool = "128M"\n'
        '[tiers.extra.postgresql]\nwal_level = "sideways"\n'
    )
    (tmp_path / "t.toml").write_text(
        spec_text(["postgresql-15"], threads=[1], measure=2, warmup=0, extra=tiers)
    )
    result = oltplab("run", "t.toml", "--results", "out", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    by_tier = {r["tier"]: r for r in cells(tmp_path / "out")}
    assert by_tier["good"]["status"] == "done"
    assert by_tier["bad"]["status"] == "failed"
    assert 'invalid value for parameter "wal_level": "sideways"' in by_tier["bad"]["reason"]


def test_postgresql_dies_with_a_killed_oltplab(tmp_path):
    (tmp_path / "k.toml").write_text(
        spec_text(["postgresql-15"], threads=[1], measure=30, warmup=0)
    )
    run = start_oltplab("run", "k.toml", "--results", "out", cwd=tmp_path)
    out = tmp_path / "out"
    output = next(out.glob("benchmark_logs/postgresql/*"), out) / "Tier128M_RW_1th.sysbench.txt"

    def measuring() -> bool:
        folder = next(out.glob("benchmark_logs/postgresql/*"), None)
        sysbench = folder / "Tier128M_RW_1th.sysbench.txt" if folder else output
        return sysbench.is_file() and "thds:" in sysbench.read_text()

    wait_for(measuring, 180, "the PostgreSQL cell's first per-second line")
    work = str(out / ".work" / "postgresql-15")
    assert processes_using(work)
    os.kill(run.pid, signal.SIGKILL)
    run.wait()
    wait_for(lambda: not processes_using(work), 30, "PostgreSQL to die with oltplab")
    again = oltplab("run", "k.toml", "--results", "out", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert [r["status"] for r in cells(out)] == ["done"]
