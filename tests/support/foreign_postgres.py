"""A PostgreSQL server someone else runs: started the way its operator would, before and
outside any oltplab run, with a role of its own that owns the benchmark database. The tests
hand oltplab its address, the role and a password file, as to any endpoint."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from oltplab.engines.families import family_of, intent_settings, option_file
from oltplab.engines.family import Layout
from oltplab.engines.hosts import Host, free_port
from oltplab.engines.launcher import PrivateInstance
from oltplab.engines.postgresql import PostgresFamily
from oltplab.engines.supplier import supply
from oltplab.spec import parse_spec
from tests.support.engines import TINY, cells

ROLE = "bench"
PASSWORD = "Their-pg-pw-5e81d2"
SUPERUSER_PASSWORD = "Their-superuser-pw-a07c"


@dataclass(frozen=True)
class NamespaceHost(Host):
    """This machine's files with a network namespace's network: the server listens on the
    namespace's address, as it would on another host of the network."""

    namespace: str = ""
    listen: str = ""
    client: str = ""  # this machine's address on the namespace's link

    def address(self) -> str:
        return self.listen

    def client_address(self) -> str:
        return self.client

    def spawn_server(
        self, command: list[str], output: Path | PurePosixPath
    ) -> subprocess.Popen[bytes]:
        return super().spawn_server(["ip", "netns", "exec", self.namespace, *command], output)


def password_file(folder: Path, password: str = PASSWORD) -> Path:
    path = folder / f"pg-{len(list(folder.glob('pg-*.pw')))}.pw"
    path.write_text(password + "\n")
    path.chmod(0o600)
    return path


@contextlib.contextmanager
def postgres_server(folder: Path, machine: Host | None = None) -> Iterator[tuple[str, int]]:
    """Debian's PostgreSQL 15 running on its own datadir; yields where it listens. Its
    role may log in with a password, to its own database only."""
    machine = machine or Host()
    spec = parse_spec('engines = [{name = "postgresql-15"}]', "t")
    distribution = supply(spec.engines[0])
    server = PrivateInstance(
        distribution, Layout(folder, family_of(distribution)), SUPERUSER_PASSWORD, machine
    )
    server.prepare_folders()
    port = free_port()
    version = distribution.version
    intent = intent_settings("postgresql", version, spec.resolve(spec.tier_list[0]))
    server.write_option_file(
        option_file("postgresql", version, "theirs", "t", server.paths(port), intent)
    )
    server.initialise(timeout=120)
    server.allow_clients((machine.client_address(),))
    server.start(port, timeout=60)
    try:
        with server.control() as control:
            control.execute(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'")
            control.execute(f"CREATE DATABASE sbtest OWNER {ROLE}")
            control.execute("REVOKE CONNECT ON DATABASE postgres, template1 FROM PUBLIC")
        yield server.host, port
    finally:
        server.stop(timeout=60)


def endpoint_spec(folder: Path, host: str, port: int, secret: Path, user: str = ROLE) -> Path:
    spec = folder / "pg.toml"
    spec.write_text(
        'workloads = ["oltp_read_only"]\n[[engines]]\nname = "theirs"\nfamily = "postgresql"\n'
        f'source = {{ endpoint = "{host}:{port}", user = "{user}", '
        f'password_file = "{secret}" }}\n'
        + TINY
        + "[protocol]\nwarmup_ro_seconds = 1\nmeasure_seconds = 2\nthreads = [1, 2]\n"
    )
    return spec


def command_lines() -> list[bytes]:
    """Every process's command line, as `ps` shows it to anyone."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                found.append((proc / "cmdline").read_bytes())
            except OSError:
                continue
    return found


def run_watching_ps(folder: Path, *args: str) -> tuple[int, str, set[bytes]]:
    """oltplab run, with the command lines seen while it ran that hold the password."""
    log = folder / "run.out"
    with log.open("w") as sink:
        run = subprocess.Popen(
            [sys.executable, "-m", "oltplab", "run", *args],
            cwd=folder,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        leaked: set[bytes] = set()
        deadline = time.monotonic() + 300
        while run.poll() is None and time.monotonic() < deadline:
            leaked |= {line for line in command_lines() if PASSWORD.encode() in line}
            time.sleep(0.05)
        if run.poll() is None:
            run.kill()
        run.wait()
    return run.returncode, log.read_text(), leaked


def assert_measured_without_leaks(folder: Path, host: str, port: int) -> None:
    """A tiny read-only cell pair on the endpoint, then its tables dropped: the password in
    no command line while it runs, nor in any file of the results directory."""
    spec = endpoint_spec(folder, host, port, password_file(folder))
    code, output, leaked = run_watching_ps(folder, spec.name, "-r", "out", "--prepare", "--cleanup")
    assert code == 0, output
    assert not leaked
    out = folder / "out"
    rows = cells(out)
    assert [r["status"] for r in rows] == ["done", "done"], [r["reason"] for r in rows]
    assert all(r["tps"] > 0 for r in rows)
    assert rows[0]["server_version"].startswith("15.")
    [folder_of_engine] = (out / "benchmark_logs_read_only" / "postgresql").iterdir()
    live = (folder_of_engine / "Tier128M_RO.vars.txt").read_text()
    assert "shared_buffers\t134217728\n" in live  # pg_settings, read as the role
    assert list(folder_of_engine.glob("Tier128M_RO_2th.engine.*"))  # the engine probe ran
    assert not list(out.rglob("*.cnf.txt"))  # nothing configured
    for path in out.rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path
    # --cleanup dropped the tables it made; the database stays the role's.
    with PostgresFamily.client(host, port, ROLE, PASSWORD) as theirs:
        assert theirs.benchmark_tables() == 0
