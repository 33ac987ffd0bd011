"""Least privilege while a run is going: every door a local user could try is shut."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import psycopg
import pytest

from tests.integration.conftest import cells, processes_using, spec_text, start_oltplab
from tests.integration.doors import (
    capabilities,
    mysql_open_doors,
    mysql_outfile_refusals,
    postgres_open_doors,
)

pytestmark = pytest.mark.engine

ENGINES = ["mysql-8.0.31", "mariadb-10.11.5", "postgresql-15"]


def _setting(text: str, name: str) -> str:
    match = re.search(rf"^{name} = '?([^'\n]+)'?$", text, re.M)
    assert match, f"{name} not in the option file"
    return match.group(1)


def inspect(work: Path) -> dict[str, object]:
    """What a local user could try against the engine now serving a cell."""
    control, bench = (work / "control-secret").read_text(), (work / "secret").read_text()
    listing = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    found: dict[str, object] = {
        "sysbench running": "--config-file=" in listing and "sysbench" in listing,
        "passwords on the process list": [p for p in (control, bench) if p in listing],
        "passwords in any command line": [
            pid for p in (control, bench) for pid in processes_using(p)
        ],
    }
    postgres = (work / "postgresql.conf").is_file()
    option_file = (work / ("postgresql.conf" if postgres else "my.cnf")).read_text()
    port = int(_setting(option_file, "port"))
    pid = int((work / ("postgres.pid" if postgres else "mysqld.pid")).read_text().split()[0])
    found["server capabilities"] = capabilities(pid)
    if postgres:
        socket = Path(_setting(option_file, "unix_socket_directories"))
        found["open doors"] = postgres_open_doors(socket, port)
        with (
            psycopg.connect(
                host="127.0.0.1", port=port, user="sbtest", password=bench, dbname="sbtest"
            ) as connection,
            pytest.raises(psycopg.Error, match="pg_write_server_files"),
        ):
            connection.execute("COPY (SELECT 1) TO '/tmp/oltplab-door'")
        return found
    socket = Path(_setting(option_file, "socket"))
    found["open doors"] = mysql_open_doors(socket, port, control)
    found["outfile"] = {
        user: code
        for user, (code, _) in mysql_outfile_refusals(
            socket, port, {"root": control, "sbtest": bench}
        ).items()
    }
    return found


def test_no_login_without_a_password_no_outfile_and_no_password_on_the_process_list(tmp_path):
    (tmp_path / "s.toml").write_text(
        spec_text(ENGINES, threads=[2], measure=8, extra='[config]\nredo_capacity = "64M"\n')
    )
    results = tmp_path / "out"
    run = start_oltplab("run", "s.toml", "--results", "out", cwd=tmp_path)
    seen: dict[str, dict[str, object]] = {}
    while run.poll() is None:
        try:
            running = [c["engine"] for c in cells(results) if c["status"] == "running"]
        except Exception:  # the ledger is not there yet
            running = []
        if running and running[0] not in seen:
            time.sleep(1)  # well inside the 8 s cell
            seen[running[0]] = inspect(results / ".work" / running[0])
        time.sleep(0.2)
    assert run.returncode == 0, run.stdout.read() if run.stdout else ""
    assert [c["status"] for c in cells(results)] == ["done"] * len(ENGINES)
    assert sorted(seen) == sorted(ENGINES)
    for engine, found in seen.items():
        assert found["sysbench running"], engine
        assert found["passwords on the process list"] == [], engine
        assert found["passwords in any command line"] == [], engine
        assert found["open doors"] == [], engine
        assert found["server capabilities"] == 0, engine
        if engine != "postgresql-15":
            # root: secure_file_priv refuses (1290); sbtest has no FILE right at all
            # (MySQL: 1227 "you need the FILE privilege", MariaDB: 1045 "access denied").
            outfile = found["outfile"]
            assert isinstance(outfile, dict) and outfile["root"] == 1290, engine
            assert outfile["sbtest"] in (1045, 1227), engine
