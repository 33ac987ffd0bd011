"""PostgreSQL as a private instance, measured like the MySQL family and reported beside it.

The demo's workloads are measured on PostgreSQL alone, once for the module: that run is
killed while it measures a cell (PostgreSQL must die with it) and resumed by the same
command; it is reported with the session's demo run, whose MySQL and MariaDB cells are the
demo's own."""

import os
import signal
import sqlite3
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from oltplab.engines.server import BENCH_SECRET, vault
from oltplab.spec import load_spec
from oltplab.store.scratch import SNAPSHOTS_ENV
from tests.support.cli import oltplab, start_oltplab
from tests.support.engines import cells, processes_using, spec_text, wait_for
from tests.support.sections import section
from tests.support.tutorial import TutorialRun

DEMO = Path(__file__).parent.parent.parent / "src" / "oltplab" / "spec" / "demo.toml"
FAMILY = '[[engines]]\nname = "mysql-8.0.31"\n\n[[engines]]\nname = "mariadb-10.11.5"\n'


@dataclass(frozen=True)
class KilledAndResumed:
    out: Path  # the results
    running: list[int]  # PostgreSQL's processes when oltplab was killed
    in_flight: list[str]  # the cells it was measuring then
    left: list[int]  # PostgreSQL's processes still there 30 s after
    resumed: subprocess.CompletedProcess[str]  # the same command, run again


@pytest.fixture(scope="module")
def demo_on_postgresql(
    tmp_path_factory: pytest.TempPathFactory, shared_snapshots: Path
) -> KilledAndResumed:
    """The demo's workloads, threads and dataset on PostgreSQL (shorter windows keep the
    suite quick), its run killed with SIGKILL while it measures a cell, then resumed."""
    demo = load_spec(DEMO)
    assert FAMILY in DEMO.read_text()
    text = DEMO.read_text().replace(FAMILY, '[[engines]]\nname = "postgresql-15"\n')
    for key, seconds in (
        ("measure_seconds", 2),
        ("warmup_ro_seconds", 1),
        ("warmup_rw_seconds", 1),
    ):
        text = text.replace(f"{key} = {getattr(demo.protocol, key)}\n", f"{key} = {seconds}\n")
        assert f"{key} = {seconds}\n" in text, key
    folder = tmp_path_factory.mktemp("demo-pg")
    (folder / "demo-pg.toml").write_text(text)
    out = folder / "out"
    work = str(out / ".work" / "postgresql-15")
    with pytest.MonkeyPatch.context() as env:  # the session's datasets, as every test's
        env.setenv(SNAPSHOTS_ENV, str(shared_snapshots))
        run = start_oltplab("run", "demo-pg.toml", "--results", "out", cwd=folder)

        def measuring() -> bool:
            return any(r["status"] == "running" for r in cells(out))

        wait_for(measuring, 180, "a PostgreSQL cell to be measured")
        running = processes_using(work)
        os.kill(run.pid, signal.SIGKILL)
        run.communicate(timeout=60)
        in_flight = [r["key"] for r in cells(out) if r["status"] == "running"]
        deadline = time.monotonic() + 30
        while (left := processes_using(work)) and time.monotonic() < deadline:
            time.sleep(0.2)
        resumed = oltplab("run", "demo-pg.toml", "--results", "out", cwd=folder)
    return KilledAndResumed(out, running, in_flight, left, resumed)


def test_postgresql_dies_with_a_killed_oltplab(demo_on_postgresql: KilledAndResumed):
    killed = demo_on_postgresql
    assert killed.running and killed.in_flight  # killed while it measured a cell
    assert not killed.left
    # The same command measures the cell it had in flight again, and the rest.
    assert killed.resumed.returncode == 0, killed.resumed.stdout + killed.resumed.stderr
    by_key = {r["key"]: r["status"] for r in cells(killed.out)}
    assert set(by_key.values()) == {"done"} and set(killed.in_flight) <= set(by_key)


def test_postgresql_runs_the_demo_workloads_next_to_the_mysql_family(
    tmp_path, browser_page, first_tutorial: TutorialRun, demo_on_postgresql: KilledAndResumed
):
    demo = load_spec(DEMO)
    result = demo_on_postgresql.resumed
    assert result.returncode == 0, result.stdout + result.stderr
    out = demo_on_postgresql.out
    postgres = cells(out)
    assert {r["engine"] for r in postgres} == {"postgresql-15"}
    assert {r["workload"] for r in postgres} == {w.name for w in demo.workloads}
    assert {r["threads"] for r in postgres} == set(demo.protocol.threads)
    assert {r["status"] for r in postgres} == {"done"} and all(r["tps"] > 0 for r in postgres)
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

    # Reported with the demo the first tutorial ran (its MySQL and MariaDB cells, the same
    # workloads, threads, dataset and configuration), which this test only reads.
    the_demo = first_tutorial.folder / "runs" / "demo"
    assert {r["status"] for r in cells(the_demo)} == {"done"}
    report = oltplab("report", str(the_demo), str(out), "-o", "report", cwd=tmp_path)
    assert report.returncode == 0, report.stdout + report.stderr
    md = (tmp_path / "report" / "report.md").read_text()
    results = section(md, "Results by scenario and tier")
    read_write = results.split("### Read-write, local")[1].split("### Read-only, local")[0]
    for engine in ("mysql-8.0.31", "mariadb-10.11.5", "postgresql-15"):
        assert f"| {engine} |" in read_write, engine
    assert "Cross-family comparison (MySQL-family vs PostgreSQL)" in results
    assert "| shared_buffers | - | - | 128M |" in md
    assert not processes_using(str(out / ".work" / "postgresql-15"))

    page, errors = browser_page
    page.goto((tmp_path / "report" / "report.html").as_uri())
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
