"""Least privilege while a run is going: every door a local user could try is shut."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import psycopg
import pytest

from oltplab.engines.server import BENCH_SECRET, CONTROL_SECRET, SYSBENCH_OPTIONS, vault
from tests.support.cli import oltplab, start_oltplab
from tests.support.doors import (
    capabilities,
    host_uid,
    mysql_open_doors,
    mysql_outfile_refusals,
    postgres_open_doors,
    signals_reach_us_from,
)
from tests.support.engines import NO_ENGINE_SUMMARY, cells, processes_using, spec_text

ENGINES = ["mysql-8.0.31", "mariadb-10.11.5", "postgresql-15"]


def _setting(text: str, name: str) -> str:
    match = re.search(rf"^{name} = '?([^'\n]+)'?$", text, re.M)
    assert match, f"{name} not in the option file"
    return match.group(1)


def _uid_or_none(pid: int) -> int | None:
    try:
        return host_uid(pid)
    except (OSError, AssertionError):  # gone meanwhile
        return None


def server_processes(pid: int) -> set[int]:
    """The server and the processes it started (PostgreSQL's backends)."""
    found = {pid}
    for path in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = path.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(path.parent.name))
    return found


def listing_with_sysbench(work: Path) -> str | None:
    """The process list, when it shows the sysbench of the engine in `work` (its option
    file on the command line); None when none runs."""
    # Unlimited width: ps cuts each line at 80 columns when its output is no terminal, and
    # a password further along a command line must not hide there.
    listing = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True).stdout
    return listing if f"--config-file={vault(work) / SYSBENCH_OPTIONS}" in listing else None


def inspect(work: Path, listing: str) -> dict[str, object]:
    """What a local user could try against the engine now serving a cell; `listing` is
    the process list taken while its sysbench ran."""
    control, bench = (
        (vault(work) / CONTROL_SECRET).read_text(),
        (vault(work) / BENCH_SECRET).read_text(),
    )
    found: dict[str, object] = {
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
    # The server's uid is its own: not ours, and no process but the server's has it.
    uid = host_uid(pid)
    found["server uid"] = uid
    found["others with its uid"] = [
        other
        for other in map(int, filter(str.isdigit, (p.name for p in Path("/proc").iterdir())))
        if other not in server_processes(pid) and _uid_or_none(other) == uid
    ]
    found["signals reaching us"] = signals_reach_us_from(uid)
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
        found["other databases"] = []
        for database in ("postgres", "template1"):
            try:
                psycopg.connect(
                    host="127.0.0.1", port=port, user="sbtest", password=bench, dbname=database
                ).close()
                found["other databases"].append(database)
            except psycopg.OperationalError as refused:
                assert "permission denied for database" in str(refused), refused
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
        spec_text(
            ENGINES, threads=[2], measure=4, warmup=0, extra='[config]\nredo_capacity = "64M"\n'
        )
    )
    results = tmp_path / "out"
    run = start_oltplab("run", "s.toml", "--results", "out", *NO_ENGINE_SUMMARY, cwd=tmp_path)
    seen: dict[str, dict[str, object]] = {}
    while run.poll() is None:
        try:
            running = [c["engine"] for c in cells(results) if c["status"] == "running"]
        except Exception:  # the ledger is not there yet
            running = []
        if running and running[0] not in seen:
            work = results / ".work" / running[0]
            if (listing := listing_with_sysbench(work)) is not None:
                # The run held still (SIGSTOP) while the doors are tried: its server stays
                # up however slow the host is, where a cell's end would stop it.
                os.kill(run.pid, signal.SIGSTOP)
                try:
                    seen[running[0]] = inspect(work, listing)
                finally:
                    os.kill(run.pid, signal.SIGCONT)
        time.sleep(0.2)
    assert run.returncode == 0, run.stdout.read() if run.stdout else ""
    assert [c["status"] for c in cells(results)] == ["done"] * len(ENGINES)
    assert sorted(seen) == sorted(ENGINES)
    for engine in ENGINES:
        # No password in plain text in the datadir or its snapshot (binary logs included).
        work = results / ".work" / engine
        secrets = [(vault(work) / name).read_bytes() for name in (CONTROL_SECRET, BENCH_SECRET)]
        kept = [
            path
            for folder in ("datadir", "snapshot")
            for path in (work / folder).rglob("*")
            if path.is_file() and any(secret in path.read_bytes() for secret in secrets)
        ]
        assert kept == [], engine
    for engine, found in seen.items():
        # Each engine was inspected with the process list that showed its sysbench running.
        assert found["passwords on the process list"] == [], engine
        assert found["passwords in any command line"] == [], engine
        assert found["open doors"] == [], engine
        assert found["server capabilities"] == 0, engine
        # Issue 34: the server's identity shares no host uid, so it cannot signal root's
        # processes (with the old mapping to `nobody` it was uid 0 on the host, and could).
        assert found["server uid"] not in (0, os.getuid()), engine
        assert found["others with its uid"] == [], engine
        assert found["signals reaching us"] == [], engine
        assert found.get("other databases", []) == [], engine
        if engine != "postgresql-15":
            # root: secure_file_priv refuses (1290); sbtest has no FILE right at all
            # (MySQL: 1227 "you need the FILE privilege", MariaDB: 1045 "access denied").
            outfile = found["outfile"]
            assert isinstance(outfile, dict) and outfile["root"] == 1290, engine
            assert outfile["sbtest"] in (1045, 1227), engine


EVIL_PLUGIN = r"""
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void loaded(void) {
    FILE *marker = fopen(MARKER, "w");
    if (marker) { fprintf(marker, "loaded as uid=%d euid=%d\n", getuid(), geteuid()); fclose(marker); }
}
"""


def test_what_the_servers_uid_writes_in_its_folder_never_reaches_roots_client(tmp_path):
    """Issue 58, H-1, as the probe did it: the uid writes a password with newlines where
    the control secret used to be, removes the snapshot's marker and places a client plugin
    in its folder. The next run neither reads that password nor loads the plugin: the
    secrets and the marker are in root's vault, which the uid cannot write."""
    engine = "mariadb-10.11.5"
    spec = tmp_path / "s.toml"
    spec.write_text(
        spec_text([engine], threads=[1], measure=2, warmup=0, workloads=("oltp_read_only",))
    )
    # The first run only leaves the work folder the uid writes in.
    first = oltplab("run", "s.toml", "--results", "out", "--no-telemetry", cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    work = tmp_path / "out" / ".work" / engine
    uid = work.stat().st_uid
    assert uid != 0, "the work folder is the server's uid's"
    marker = tmp_path / "plugin-loaded"
    plugins = work / "tmp"
    source = tmp_path / "evil.c"
    source.write_text(EVIL_PLUGIN)
    subprocess.run(
        ["gcc", "-shared", "-fPIC", f'-DMARKER="{marker}"', "-o", str(plugins / "evil.so"),
         str(source)],
        check=True,
    )  # fmt: skip
    (work / "control-secret").write_text(f"pw\nplugin-dir={plugins}\ndefault-auth=evil\n")
    (work / "snapshot.json").unlink(missing_ok=True)
    for planted in (plugins / "evil.so", work / "control-secret"):
        os.chown(planted, uid, uid)
    control_before = (vault(work) / CONTROL_SECRET).read_text()

    # A new session (another workload), so that root's client runs again against it.
    both = ("oltp_read_only", "oltp_point_select")
    spec.write_text(spec_text([engine], threads=[1], measure=2, warmup=0, workloads=both))
    second_started = time.time()
    second = oltplab("run", "s.toml", "--results", "out", cwd=tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert [c["status"] for c in cells(tmp_path / "out")] == ["done", "done"]
    assert not marker.exists(), marker.read_text()
    assert (vault(work) / CONTROL_SECRET).read_text() == control_before
    # Root's client did run in the second run (pt-mysql-summary, once per session).
    summaries = (tmp_path / "out").rglob("*.pt-mysql-summary.txt")
    assert any(summary.stat().st_mtime > second_started for summary in summaries)
