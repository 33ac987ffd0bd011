"""Ways into a running instance that must stay shut: logins without a password, files
written through the server, and the server's own privileges."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import psycopg
import pymysql


def _mysql_login(user: str, password: str | None, **where: object) -> pymysql.Connection:
    return pymysql.connect(user=user, password=password or "", connect_timeout=5, **where)


def mysql_open_doors(socket: Path, port: int, control_password: str) -> list[str]:
    """Every account (those the server lists, and the usual names) tried without a
    password over TCP and over the socket; the logins that worked."""
    control = _mysql_login("root", control_password, unix_socket=str(socket))
    with control, control.cursor() as cursor:
        cursor.execute("SELECT User FROM mysql.user")
        listed = {str(row[0]) for row in cursor.fetchall()}
    opened = []
    for user in sorted(listed | {"root", "", "sbtest", "mysql", "nobody"}):
        for where in ({"unix_socket": str(socket)}, {"host": "127.0.0.1", "port": port}):
            try:
                _mysql_login(user, None, **where).close()
            except pymysql.MySQLError:
                continue
            opened.append(f"{user!r} via {where}")
    return opened


def mysql_outfile_refusals(
    socket: Path, port: int, accounts: dict[str, str]
) -> dict[str, tuple[int, str]]:
    """`SELECT ... INTO OUTFILE '/tmp/...'` as each account: the server's refusal (code,
    message) per account. A file written would fail the caller's check."""
    refusals = {}
    for user, password in accounts.items():
        target = Path("/tmp") / f"oltplab-door-{uuid.uuid4().hex}"
        where = (
            {"unix_socket": str(socket)} if user == "root" else {"host": "127.0.0.1", "port": port}
        )
        with _mysql_login(user, password, **where) as connection:
            try:
                with connection.cursor() as cursor:
                    cursor.execute(f"SELECT 'x' INTO OUTFILE '{target}'")
            except pymysql.MySQLError as exc:
                refusals[user] = (exc.args[0], str(exc.args[-1]))
        assert not target.exists(), f"{user} wrote {target} through the server"
    return refusals


def postgres_open_doors(socket_dir: Path, port: int) -> list[str]:
    opened = []
    for user in ("postgres", "sbtest", "root", "nobody"):
        for host in (str(socket_dir), "127.0.0.1"):
            try:
                psycopg.connect(
                    host=host, port=port, user=user, dbname="postgres", connect_timeout=5
                ).close()
            except psycopg.Error:
                continue
            opened.append(f"{user} via {host}")
    return opened


def capabilities(pid: int) -> int:
    """The effective capability set of a process, as the host sees it (0: none)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    raise AssertionError(f"no CapEff line for pid {pid}")


def host_uid(pid: int) -> int:
    """The real uid of a process, as the host sees it."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise AssertionError(f"no Uid line for pid {pid}")


def signals_reach_us_from(uid: int) -> list[str]:
    """The signals a process running as `uid` could send to a process of ours (the user
    who runs oltplab, root here): each is tried on a sleep of our own."""
    reached = []
    for name in ("TERM", "STOP", "0"):
        target = subprocess.Popen(["sleep", "60"])
        try:
            sent = subprocess.run(
                ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--",
                 "kill", f"-{name}", str(target.pid)],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if sent.returncode == 0:
                reached.append(name)
            else:
                assert "Operation not permitted" in sent.stderr, sent.stderr
            assert target.poll() is None, "the sleep was killed"
        finally:
            target.kill()
            target.wait()
    return reached
