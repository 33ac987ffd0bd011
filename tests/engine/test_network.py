"""Client and server on different hosts: two test hosts built on this machine.

A network namespace is the server host, joined to this one by a veth pair; a throwaway
sshd runs in it with a key made for the test. oltplab reaches it with the real `ssh`.
Everything (sshd, namespace, link, keys) is removed even when a test fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest

from oltplab.engines.provision import remote_folder
from oltplab.measure.run import engine_key
from oltplab.store.directory import safe_name
from oltplab.store.scratch import scratch_root
from tests.support.cli import oltplab, start_oltplab
from tests.support.engines import TINY, cells, processes_using, wait_for
from tests.support.foreign_postgres import (
    NamespaceHost,
    assert_measured_without_leaks,
    postgres_server,
)
from tests.support.sections import section

SSHD_CANDIDATES = (
    Path("/usr/sbin/sshd"),
    Path(os.environ.get("OLTPLAB_CACHE", Path.home() / ".cache" / "oltplab"))
    / "tools/openssh-server/usr/sbin/sshd",
)


@dataclass
class ServerHost:
    namespace: str
    client_link: str
    address: str
    key: Path
    known_hosts: Path
    workdir: Path

    def spec_lines(self) -> str:
        return (
            f'[[hosts]]\nname = "db1"\nssh = "root@{self.address}"\n'
            f'identity_file = "{self.key}"\nworkdir = "{self.workdir}"\n'
            f'options = {{ UserKnownHostsFile = "{self.known_hosts}", '
            'StrictHostKeyChecking = "yes" }\n'
        )

    def pids(self) -> list[int]:
        out = subprocess.run(
            ["ip", "netns", "pids", self.namespace], capture_output=True, text=True, check=False
        )
        return [int(p) for p in out.stdout.split()]


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, text=True)


@pytest.fixture(scope="module")
def server_host(tmp_path_factory):
    """One test host for the module: its tests' runs share its work directory, so the
    engines' binaries are pushed to it once (engines/remote.py), not once a test."""
    tmp_path = tmp_path_factory.mktemp("db1")
    sshd = next((p for p in SSHD_CANDIDATES if p.exists()), None)
    if sshd is None:
        pytest.skip("no sshd binary (scripts/setup.sh unpacks one)")
    tag = f"{os.getpid() % 10000}{int(time.time() * 1000) % 1000}"
    subnet = f"10.{200 + os.getpid() % 50}.{int(tag) % 250}"
    host = ServerHost(
        namespace=f"oltplab-t{tag}",
        client_link=f"olc{tag}"[:15],
        address=f"{subnet}.2",
        key=tmp_path / "client_key",
        known_hosts=tmp_path / "known_hosts",
        workdir=tmp_path / "db1-work",
    )
    server_link = f"ols{tag}"[:15]
    sshd_process = None
    try:
        sh("ip", "netns", "add", host.namespace)
        sh("ip", "link", "add", host.client_link, "type", "veth", "peer", "name", server_link)
        sh("ip", "link", "set", server_link, "netns", host.namespace)
        sh("ip", "addr", "add", f"{subnet}.1/24", "dev", host.client_link)
        sh("ip", "link", "set", host.client_link, "up")
        sh("ip", "-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", server_link)
        sh("ip", "-n", host.namespace, "link", "set", server_link, "up")
        sh("ip", "-n", host.namespace, "link", "set", "lo", "up")
        host_key = tmp_path / "host_key"
        for key in (host.key, host_key):
            sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
        (tmp_path / "authorized_keys").write_text(host.key.with_suffix(".pub").read_text())
        public = host_key.with_suffix(".pub").read_text().split()
        host.known_hosts.write_text(f"{host.address} {public[0]} {public[1]}\n")
        config = tmp_path / "sshd_config"
        config.write_text(
            f"ListenAddress {host.address}\nPort 22\nHostKey {host_key}\n"
            f"AuthorizedKeysFile {tmp_path / 'authorized_keys'}\nPidFile {tmp_path / 'sshd.pid'}\n"
            "StrictModes no\nPermitRootLogin prohibit-password\nUsePAM no\n"
            "ClientAliveInterval 2\nClientAliveCountMax 3\n"
        )
        # sshd wants its privilege separation user and directory; the test host gets them in
        # its own mount namespace, so this machine's /etc/passwd and /run stay as they are.
        passwd = tmp_path / "passwd"
        passwd.write_text(
            Path("/etc/passwd").read_text()
            + "sshd:x:65534:65534:privsep:/run/sshd:/usr/sbin/nologin\n"
        )
        inside = (
            f"mount --bind {passwd} /etc/passwd && mount -t tmpfs oltplab-test /run && "
            f"mkdir /run/sshd && exec {sshd} -D -e -f {config}"
        )
        sshd_log = (tmp_path / "sshd.log").open("w")
        sshd_process = subprocess.Popen(
            ["ip", "netns", "exec", host.namespace, "unshare", "-m", "sh", "-c", inside],
            stdout=subprocess.DEVNULL,
            stderr=sshd_log,
        )
        deadline = time.monotonic() + 20
        while (
            subprocess.run(
                [
                    "ssh",
                    "-o",
                    "BatchMode=yes",
                    "-o",
                    f"UserKnownHostsFile={host.known_hosts}",
                    "-i",
                    str(host.key),
                    f"root@{host.address}",
                    "true",
                ],
                capture_output=True,
                check=False,
            ).returncode
            != 0
        ):
            assert time.monotonic() < deadline, (tmp_path / "sshd.log").read_text()
            time.sleep(0.3)
        yield host
    finally:
        for pid in host.pids():  # whatever still runs in the test host is the test's
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if sshd_process is not None:
            sshd_process.kill()
            sshd_process.wait()
            sshd_log.close()
        subprocess.run(["ip", "link", "del", host.client_link], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True, check=False)
        shutil.rmtree(host.workdir, ignore_errors=True)
        for key in tmp_path.glob("*_key*"):  # the throwaway client and host keys
            key.unlink()


def instance_folder(host: ServerHost, results: Path, engine: str) -> Path:
    """The engine's folder on the test host for these results (each run has its own)."""
    work = scratch_root(results) / safe_name(engine_key(engine, "db1"))
    return remote_folder(PurePosixPath(host.workdir), work)


# MariaDB: placed on the test host and its datadir made there in about 30 s on a busy host
# (some 50 ssh commands of most of a second each), MySQL 8.0's in about two minutes; nothing
# checked here depends on the family (PostgreSQL's own is checked below).
ENGINE, ENGINE_LOGS = "mariadb-10.11.5", Path("mariadb") / "10.11.5-MariaDB-log"


def network_spec(host: ServerHost, measure: int, threads: list[int], extra: str = "") -> str:
    return (
        f'workloads = ["oltp_read_write"]\n[[engines]]\nname = "{ENGINE}"\n'
        + host.spec_lines()
        + '[[placements]]\nserver = "local"\n[[placements]]\nserver = "db1"\n'
        + extra
        + TINY
        + "[protocol]\nwarmup_ro_seconds = 1\nwarmup_rw_seconds = 1\nwarmup_threads = 2\n"
        + f"measure_seconds = {measure}\nthreads = {threads}\n"
        + "stop_timeout_seconds = 60\nstart_timeout_seconds = 120\n"
    )


# The delay planted on the link, large beside what the busy host and the proxy add on their
# own: a round trip's share of a transaction's local latency (a few ms, under 0.8 CPU of
# steal), and about 4 ms a round trip that toxiproxy alone added on such a host
# (2026-11-29). Applied once it gives about 30 ms a round trip; applied twice (both ways),
# 60 ms; not at all, a few.
DELAY_MS = 30.0


def test_engine_on_another_host_gives_a_network_scenario_with_its_added_latency(
    tmp_path, server_host
):
    """One engine placed here and on the server host, its link delayed: two scenarios,
    the network one measured through the shaped link, and the report's network section
    saying what the delay added to each of a transaction's round trips."""
    spec = network_spec(
        server_host, measure=3, threads=[1, 2], extra=f"[network]\ndelay_ms = {DELAY_MS}\n"
    )
    (tmp_path / "n.toml").write_text(spec)
    # No check reads the engine summary: 2-15 s a session over the delayed link.
    quick = ("--telemetry", "default,-pt-mysql-summary")
    done = oltplab("run", "n.toml", "--results", "out", *quick, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "out"
    by_scenario = {}
    for row in cells(out):
        assert row["status"] == "done", (row["key"], row["reason"])
        by_scenario.setdefault(row["scenario"], []).append(row["threads"])
    assert by_scenario == {"rw-local": [1, 2], "rw-network": [1, 2]}
    # The network cells' engine ran in the server host, listening on its address only.
    remote_cnf = instance_folder(server_host, out, ENGINE) / "my.cnf"
    assert f"bind_address = {server_host.address}" in remote_cnf.read_text()
    network_logs = out / "benchmark_remote_logs" / ENGINE_LOGS
    for suffix in ("sysbench", "iostat", "vmstat", "mpstat", "engine"):
        assert list(network_logs.glob(f"Tier*_RW_2th.{suffix}.*")), suffix
    assert "Tier128M_RW.errlog.txt" in {p.name for p in network_logs.iterdir()}
    # Nothing of ours is left running in the server host after the run, the shaping's
    # proxy included.
    assert not processes_using(str(remote_cnf))
    left = {Path(f"/proc/{pid}/comm").read_text().strip() for pid in server_host.pids()}
    assert left <= {"sshd", "sh", "unshare"}, left
    record = json.loads((out / "run.json").read_text())
    link = record["links"][f"{ENGINE}@db1"]
    assert link["shaping"] in ("delay 30 ms via tc netem", "delay 30 ms via toxiproxy"), link
    assert link["rtt_ms"] >= DELAY_MS  # measured through the shaped link

    report = oltplab("report", "out", "--output", "report", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    assert "Read-write, local" in text and "Read-write, network" in text
    assert section(text, "Network: latency added per transaction")
    assert "link shaping: delay 30 ms via" in text
    rows = [line for line in text.splitlines() if line.startswith(f"| {ENGINE} | rw |")]
    assert len(rows) == 2, rows  # one a thread count
    for row in rows:
        cells_ = [c.strip() for c in row.strip("|").split("|")]
        added, round_trips, per_round_trip = float(cells_[6]), float(cells_[7]), float(cells_[8])
        assert round_trips == pytest.approx(20, abs=0.5)  # 18 queries + begin/commit
        # Each round trip gains the delay once: 20 x 30 ms = 600 ms per transaction.
        assert DELAY_MS * 0.8 <= per_round_trip <= DELAY_MS * 1.5, row
        assert added == pytest.approx(round_trips * per_round_trip, rel=0.01)


def test_postgresql_on_another_host_through_a_cut_link(tmp_path, server_host):
    """The PostgreSQL family composed with an SSH host: initdb, the server and its control
    connection there, sysbench's pgsql driver from here over the link. The link is cut for
    10 s while the second cell measures: ssh gives the session up (ServerAlive, 6-8 s), that
    cell fails saying so, the one before stays done, and the next runs on a server started
    again. Cells of 8 s: the cut comes 2 s in, with 6 s to spare for a busy host to get to
    it."""
    spec = (
        'workloads = ["oltp_read_write"]\n[[engines]]\nname = "postgresql-15"\n'
        + server_host.spec_lines()
        + '[[placements]]\nserver = "db1"\n'
        + TINY
        + "[protocol]\nwarmup_ro_seconds = 1\nwarmup_rw_seconds = 1\nwarmup_threads = 2\n"
        + "measure_seconds = 8\nthreads = [1, 2, 3]\n"
        + "stop_timeout_seconds = 60\nstart_timeout_seconds = 120\n"
    )
    (tmp_path / "pg.toml").write_text(spec)
    run = start_oltplab("run", "pg.toml", "--results", "out", cwd=tmp_path)
    out = tmp_path / "out"

    def second_cell_measuring() -> bool:
        files = list(out.glob("benchmark_remote_logs/*/*/Tier*_RW_2th.sysbench.txt"))
        return bool(files) and "[ 2s ]" in files[0].read_text()

    wait_for(second_cell_measuring, 300, "the second cell's second second")
    sh("ip", "link", "set", server_host.client_link, "down")
    time.sleep(10)
    sh("ip", "link", "set", server_host.client_link, "up")
    output, _ = run.communicate(timeout=600)
    assert run.returncode == 1, output  # a failed cell
    by_threads = {row["threads"]: row for row in cells(out)}
    assert by_threads[2]["status"] == "failed"
    reason = by_threads[2]["reason"]
    assert "ssh session holding the engine on host db1 ended" in reason, reason
    for threads in (1, 3):
        row = by_threads[threads]
        assert (row["status"], row["scenario"]) == ("done", "rw-network"), row["reason"]
        assert row["tps"] > 0

    remote_conf = instance_folder(server_host, out, "postgresql-15") / "postgresql.conf"
    assert f"listen_addresses = '{server_host.address}'" in remote_conf.read_text()
    # sysbench's machine may log in over the link; the loopback rules initdb wrote stay.
    hba = (remote_conf.parent / "snapshot" / "pg_hba.conf").read_text()
    assert "host all all 10." in hba and "127.0.0.1/32" in hba
    record = json.loads((out / "run.json").read_text())
    assert record["engines"]["postgresql-15@db1"]["server_version"].startswith("15.")
    assert record["links"]["postgresql-15@db1"]["rtt_ms"] > 0
    # After the run nothing of ours runs in the server host: only the test's sshd is there.
    wait_for(lambda: not processes_using(str(remote_conf)), 30, "no engine left in the host")
    left = {Path(f"/proc/{pid}/comm").read_text().strip() for pid in server_host.pids()}
    assert left <= {"sshd", "sh", "unshare"}, left
    report = oltplab("report", "out", "--output", "report", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert "Read-write, network" in (tmp_path / "report" / "report.md").read_text()


def test_postgresql_endpoint_on_another_host(tmp_path, server_host):
    """A PostgreSQL server its operator runs on the server host, listening on that host's
    address: oltplab reaches it there as an endpoint, with no ssh of its own."""
    client = server_host.address.rsplit(".", 1)[0] + ".1"
    theirs = NamespaceHost(
        namespace=server_host.namespace, listen=server_host.address, client=client
    )
    with postgres_server(tmp_path / "theirs", theirs) as (host, port):
        assert host == server_host.address
        assert_measured_without_leaks(tmp_path, host, port)
