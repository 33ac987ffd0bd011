"""An endpoint engine: a server oltplab did not start, measured as it is and left running."""

import os

import pytest

from oltplab.engines.families import family_of, intent_settings, option_file
from oltplab.engines.family import Layout
from oltplab.engines.hosts import Host, free_port
from oltplab.engines.launcher import PrivateInstance
from oltplab.engines.supplier import supply
from oltplab.spec import parse_spec
from tests.support.cli import oltplab
from tests.support.engines import TINY, cells

PASSWORD = "Endpoint-pw-7f3a9c"


@pytest.fixture(scope="module")
def foreign_server(tmp_path_factory):
    """A MariaDB that stands for someone else's server, one for the module: each test
    leaves it as it found it (no sbtest tables, its settings as they were)."""
    spec = parse_spec('engines = [{name = "mariadb-debian"}]', "t")
    distribution = supply(spec.engines[0])
    layout = Layout(tmp_path_factory.mktemp("foreign"), family_of(distribution))
    server = PrivateInstance(distribution, layout, "their-root-pw", Host())
    server.prepare_folders()
    port = free_port()
    paths = server.paths(port)
    server.layout.cnf.write_text(
        option_file(
            "mariadb",
            distribution.version,
            "foreign",
            "t",
            paths,
            intent_settings("mariadb", distribution.version, spec.resolve(spec.tier_list[0])),
        )
    )
    server.initialise(timeout=120)
    server.start(port, timeout=60)
    with server.control() as control:
        control.execute("CREATE DATABASE sbtest")
        control.execute("CREATE USER 'bench'@'%%' IDENTIFIED BY %s", (PASSWORD,))
        control.execute("GRANT ALL ON sbtest.* TO 'bench'@'%'")
    yield server, port
    server.stop(timeout=60)


def run(tmp_path, port, *flags, password=PASSWORD):
    (tmp_path / "e.toml").write_text(
        'workloads = ["oltp_read_only"]\n'
        f'[[engines]]\nname = "theirs"\n'
        f'source = {{endpoint = "127.0.0.1:{port}", user = "bench", password_env = "THEIR_PW"}}\n'
        + TINY
        + "[protocol]\nwarmup_ro_seconds = 1\nmeasure_seconds = 2\nthreads = [1, 2]\n"
    )
    env = {**os.environ, "THEIR_PW": password}
    return oltplab("run", "e.toml", "-r", "out", *flags, *QUICK, cwd=tmp_path, env=env)


# No check here reads the engine summary (pt-mysql-summary, 2-5 s a session).
QUICK = ("--telemetry", "default,-pt-mysql-summary")


def test_endpoint_is_measured_without_being_started_configured_or_stopped(tmp_path, foreign_server):
    server, port = foreign_server
    refused = run(tmp_path, port)
    assert refused.returncode == 1
    reasons = {r["reason"] for r in cells(tmp_path / "out")}
    assert len(reasons) == 1 and "--prepare" in reasons.pop()

    result = run(tmp_path, port, "--prepare", "--retry-failed", "--cleanup")
    assert result.returncode == 0, result.stdout + result.stderr
    rows = cells(tmp_path / "out")
    assert {r["status"] for r in rows} == {"done"}
    assert rows[0]["server_version"].startswith("10.11")
    assert server.alive()  # still running: not ours to stop
    out = tmp_path / "out"
    assert list(out.glob("benchmark_logs_read_only/mariadb/*/Tier128M_RO.vars.txt"))
    assert not list(out.rglob("*.cnf.txt"))  # nothing configured
    for path in out.rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path


def test_a_refused_endpoint_password_is_one_line_exit_2_and_nothing_created(
    tmp_path, foreign_server
):
    _, port = foreign_server
    result = run(tmp_path, port, password="not-the-password-123")
    assert result.returncode == 2, result.stdout + result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "refused the login" in line and "Access denied for user 'bench'" in line
    assert "not-the-password-123" not in result.stdout + result.stderr
    assert not (tmp_path / "out").exists()


def test_tiers_that_would_reconfigure_an_endpoint_are_refused_and_cleanup_is_explicit(
    tmp_path, foreign_server
):
    server, port = foreign_server
    (tmp_path / "e.toml").write_text(
        'workloads = ["oltp_read_only"]\n'
        f'[[engines]]\nname = "theirs"\n'
        f'source = {{endpoint = "127.0.0.1:{port}", user = "bench", password_env = "THEIR_PW"}}\n'
        '[[tiers]]\nname = "as-is"\nbuffer_pool = "128M"\n'
        '[[tiers]]\nname = "bigger"\nbuffer_pool = "512M"\n'
        + TINY
        + "[protocol]\nwarmup_ro_seconds = 1\nmeasure_seconds = 2\nthreads = [1]\n"
    )
    env = {**os.environ, "THEIR_PW": PASSWORD}
    result = oltplab(
        "run", "e.toml", "-r", "out", "--prepare", "--cleanup", *QUICK, cwd=tmp_path, env=env
    )
    assert result.returncode == 1, result.stdout + result.stderr
    by_tier = {r["tier"]: r for r in cells(tmp_path / "out")}
    assert by_tier["as-is"]["status"] == "done"
    assert by_tier["bigger"]["status"] == "failed"
    reason = by_tier["bigger"]["reason"]
    assert "would change the endpoint's configuration" in reason
    assert "innodb_buffer_pool_size" in reason
    # Not reconfigured, not stopped; --cleanup dropped the sbtest tables and nothing else.
    with server.control() as control:
        assert control.rows("SELECT @@innodb_buffer_pool_size")[0][0] == 128 * 1024**2
        tables = control.rows(
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'sbtest'"
        )[0][0]
        assert tables == 0
        assert control.rows("SHOW DATABASES LIKE 'sbtest'")
    assert server.alive()
