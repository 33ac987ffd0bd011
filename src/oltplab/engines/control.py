"""Control queries over one connection: version, variables, status, the benchmark user."""

from __future__ import annotations

import contextlib
from pathlib import Path
from types import TracebackType

import pymysql

from oltplab.errors import EngineError


class Control:
    """A root connection to a private instance (unix socket) or to an endpoint (TCP)."""

    def __init__(
        self,
        *,
        socket: Path | None = None,
        host: str = "127.0.0.1",
        port: int = 3306,
        user: str = "root",
        password: str = "",
        timeout: float = 10,
    ) -> None:
        try:
            self._conn = pymysql.connect(
                unix_socket=str(socket) if socket else None,
                host=host,
                port=port,
                user=user,
                password=password,
                connect_timeout=timeout,
                read_timeout=120,
                autocommit=True,
            )
        except pymysql.MySQLError as exc:
            where = socket if socket else f"{host}:{port}"
            # exc.args never holds the password, only the server's message.
            raise EngineError(f"cannot connect to {where} as {user}: {exc.args[-1]}") from None

    def __enter__(self) -> Control:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(pymysql.MySQLError):
            self._conn.close()

    def rows(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        with self._conn.cursor() as cursor:
            cursor.execute(sql, args or None)
            return list(cursor.fetchall())

    def execute(self, sql: str, args: tuple[object, ...] = ()) -> None:
        with self._conn.cursor() as cursor:
            cursor.execute(sql, args or None)

    def version(self) -> str:
        return str(self.rows("SELECT VERSION()")[0][0])

    def variables(self) -> dict[str, str]:
        return {str(k): "" if v is None else str(v) for k, v in self.rows("SHOW GLOBAL VARIABLES")}

    def status(self) -> dict[str, str]:
        return {str(k): "" if v is None else str(v) for k, v in self.rows("SHOW GLOBAL STATUS")}

    def create_benchmark_user(
        self, user: str, password: str, *, native_password: bool, clients: tuple[str, ...] = ("%",)
    ) -> None:
        """A user sysbench can log in as over TCP from the client addresses; anonymous
        users would shadow it."""
        for name, host in self.rows("SELECT User, Host FROM mysql.user WHERE User = ''"):
            self.execute("DROP USER %s@%s", (name, host))
        self.execute("CREATE DATABASE IF NOT EXISTS sbtest")
        plugin = "WITH mysql_native_password " if native_password else ""
        for client in clients:
            self.execute(
                f"CREATE USER IF NOT EXISTS %s@%s IDENTIFIED {plugin}BY %s",
                (user, client, password),
            )
            self.execute("GRANT ALL PRIVILEGES ON sbtest.* TO %s@%s", (user, client))


def format_pairs(values: dict[str, str]) -> str:
    """Variables or status in the tab-separated form `mysql -e 'SHOW ...'` prints."""
    return "".join(f"{name}\t{value}\n" for name, value in sorted(values.items()))
