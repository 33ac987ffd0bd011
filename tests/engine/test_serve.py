"""`oltplab engines serve`: a catalog engine provisioned by its family and served in the
foreground on every interface, as deploy.kube.database runs it in a StatefulSet: the
benchmark account has rights on its own database only, SIGTERM stops the server cleanly,
and a second start on the same datadir keeps the account."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pymysql

from tests.support.engines import processes_using


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve(datadir: Path, password: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DB_PASSWORD": password}
    with log.open("ab") as sink:
        started = subprocess.Popen(
            [sys.executable, "-m", "oltplab", "engines", "serve", "mariadb-10.11.5",
             "--datadir", str(datadir), "--password-env", "DB_PASSWORD", "--port", str(port)],
            env=env, stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
    deadline = time.monotonic() + 120
    while b"serving mariadb-10.11.5" not in log.read_bytes():
        assert started.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.5)
    return started


def test_a_served_engine_answers_everywhere_stops_on_sigterm_and_starts_again(
    tmp_path: Path,
) -> None:
    password, datadir = secrets.token_urlsafe(18), tmp_path / "db"
    for attempt in (1, 2):
        log, port = tmp_path / f"serve-{attempt}.log", free_port()
        server = serve(datadir, password, port, log)
        try:
            with (
                pymysql.connect(
                    host="127.0.0.1", port=port, user="sbtest", password=password, database="sbtest"
                ) as connection,
                connection.cursor() as cursor,
            ):
                cursor.execute("SHOW GRANTS")
                grants = [row[0] for row in cursor.fetchall()]
            assert any("ON `sbtest`.* TO `sbtest`@`%`" in g for g in grants), grants
            assert not any("ON *.*" in g and "USAGE" not in g for g in grants), grants
            listening = subprocess.run(["ss", "-ltnH", f"sport = :{port}"],
                                       capture_output=True, text=True).stdout  # fmt: skip
            assert "0.0.0.0:" in listening, (attempt, listening)
        finally:
            server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=120) == 0, log.read_text()
        assert "stopped cleanly" in log.read_text()
        assert processes_using(str(datadir)) == []
        assert password not in log.read_text()
