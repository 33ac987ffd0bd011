"""Control queries over one connection: version, variables, status, the accounts.

`Control` speaks to MySQL-family servers, `PostgresControl` to PostgreSQL; both answer
the same questions, so the runner and the telemetry probe need not know which it is.

On the instances oltplab starts every account that can log in has a password: the control
account (root, postgres) and the benchmark user, both random and kept in files only their
owner can read. `secure_accounts` drops whatever else the install step created and checks
that no account is left without a password.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from types import TracebackType
from typing import Self

import psycopg
import pymysql
from psycopg import sql

from oltplab.base.errors import EngineError
from oltplab.base.wire import MYSQL, POSTGRESQL, WireProtocol


def said(exc: pymysql.MySQLError) -> str:
    """What the server or the driver said, never empty: the message, else the error's class
    and code (a connection cut before the server answered carries an empty message). The
    arguments hold no password, only the server's message and its code."""
    message = str(exc.args[-1]).strip() if exc.args else ""
    code = f" {exc.args[0]}" if len(exc.args) > 1 else ""
    return message or f"{type(exc).__name__}{code}, with no message"


class LoginRefused(EngineError):
    """The server answered and refused the login: the password, the account or the
    database is wrong. Input to fix, not a server that may come back."""


# MySQL's refusals of a login (the control connection names no database): access denied,
# by the password or by an auth plugin, or to the client's address (the account's host).
_REFUSED_LOGINS = frozenset({1045, 1698, 1130})


class Connection:
    """A control connection, whichever protocol it speaks: the questions the runner, the
    provisioner and the telemetry probe ask, over rows()."""

    protocol: WireProtocol

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError

    def rows(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        raise NotImplementedError

    def execute(self, sql: str, args: tuple[object, ...] = ()) -> None:
        self.rows(sql, args)

    def secure_accounts(self, bench_user: str) -> None:
        raise NotImplementedError

    def version(self) -> str:
        raise NotImplementedError

    def self_description(self) -> str:
        """What the server says it is (its version and, where there is one, its comment):
        what tells a family of its protocol from another."""
        raise NotImplementedError

    def benchmark_tables(self) -> int:
        """How many of sysbench's sbtestN tables the benchmark database holds."""
        raise NotImplementedError

    def unconfined(self) -> str | None:
        """Why the logged-in account may reach more than the benchmark database, where the
        family can tell (an endpoint's account is the operator's)."""
        return None

    def variables(self) -> dict[str, str]:
        raise NotImplementedError

    def status(self) -> dict[str, str]:
        raise NotImplementedError

    def create_benchmark_user(
        self, user: str, password: str, *, clients: tuple[str, ...] = ("%",)
    ) -> None:
        raise NotImplementedError


# Accounts MySQL and MariaDB create locked, for their own use; nobody can log in as them.
SYSTEM_ACCOUNTS = frozenset({"mysql.sys", "mysql.session", "mysql.infoschema", "mariadb.sys"})
# The accounts the install step may create besides root@localhost: root over TCP and the
# anonymous users, for the loopback addresses and this machine's name.
INSTALLED_HOSTS = ("127.0.0.1", "::1", "localhost", "%")


def quote(value: str) -> str:
    """A string literal for SQL written to a file (no bound parameters there)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


# Statements that set a password are kept out of the binary log: MariaDB writes them there
# as they were sent, and the log stays in the datadir and its snapshot.
NO_BINARY_LOG = "SET sql_log_bin = 0"
# How an account gets a password that sysbench (MariaDB Connector/C) and PyMySQL can both
# use: MySQL 8.0 defaults to caching_sha2_password, which needs TLS or RSA keys.
NATIVE_PASSWORD = "IDENTIFIED WITH mysql_native_password BY"


class Control(Connection):
    """A root connection to a private instance (unix socket) or to an endpoint (TCP)."""

    protocol = MYSQL

    def __init__(
        self,
        *,
        socket: Path | None = None,
        host: str = "127.0.0.1",
        port: int = 3306,
        user: str = "root",
        password: str,
        timeout: float = 10,
        password_clause: str = NATIVE_PASSWORD,
        grant_creates_user: bool = False,
    ) -> None:
        self._password_clause = password_clause  # the family's (MariaDB: IDENTIFIED BY)
        # Before CREATE USER IF NOT EXISTS (MySQL 5.7), a GRANT with a password made the user.
        self._grant_creates_user = grant_creates_user
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
            refused = bool(exc.args) and exc.args[0] in _REFUSED_LOGINS
            error = LoginRefused if refused else EngineError
            raise error(f"cannot connect to {where} as {user}: {said(exc)}") from None

    def close(self) -> None:
        with contextlib.suppress(pymysql.MySQLError):
            self._conn.close()

    def rows(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        with self._conn.cursor() as cursor:
            cursor.execute(sql, args or None)
            return list(cursor.fetchall())

    def version(self) -> str:
        return str(self.rows("SELECT VERSION()")[0][0])

    def self_description(self) -> str:
        version, comment = self.rows("SELECT VERSION(), @@version_comment")[0]
        return f"{version} {comment}"

    def benchmark_tables(self) -> int:
        return int(
            str(
                self.rows(
                    "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'sbtest'"
                    " AND table_name REGEXP '^sbtest[0-9]+$'"
                )[0][0]
            )
        )

    def variables(self) -> dict[str, str]:
        return {str(k): "" if v is None else str(v) for k, v in self.rows("SHOW GLOBAL VARIABLES")}

    def status(self) -> dict[str, str]:
        return {str(k): "" if v is None else str(v) for k, v in self.rows("SHOW GLOBAL STATUS")}

    def create_benchmark_user(
        self,
        user: str,
        password: str,
        *,
        clients: tuple[str, ...] = ("%",),
    ) -> None:
        """A user sysbench can log in as over TCP from the client addresses, with rights on
        the sbtest database only (no FILE, no SUPER)."""
        self.execute(NO_BINARY_LOG)
        self.execute("CREATE DATABASE IF NOT EXISTS sbtest")
        clause = self._password_clause
        for client in clients:
            if self._grant_creates_user:
                self.execute(
                    f"GRANT ALL PRIVILEGES ON sbtest.* TO %s@%s {clause} %s",
                    (user, client, password),
                )
                continue
            self.execute(f"CREATE USER IF NOT EXISTS %s@%s {clause} %s", (user, client, password))
            self.execute("GRANT ALL PRIVILEGES ON sbtest.* TO %s@%s", (user, client))

    def _accounts(self) -> list[tuple[str, str]]:
        # MariaDB lists roles among the accounts; they cannot log in.
        roles = "is_role = 'Y'" if self._has_column("mysql", "user", "is_role") else "FALSE"
        return [
            (str(user), str(host))
            for user, host, is_role in self.rows(f"SELECT User, Host, {roles} FROM mysql.user")
            if not is_role
        ]

    def _has_column(self, schema: str, table: str, column: str) -> bool:
        return bool(
            self.rows(
                "SELECT 1 FROM information_schema.columns"
                " WHERE table_schema = %s AND table_name = %s AND column_name = %s",
                (schema, table, column),
            )
        )

    def secure_accounts(self, bench_user: str) -> None:
        """Drop every account but root@localhost, the benchmark user and the locked system
        accounts, then check that none is left without a password."""
        for user, host in self._accounts():
            if (user, host) == ("root", "localhost") or user in SYSTEM_ACCOUNTS:
                continue
            if user != bench_user:
                self.execute("DROP USER %s@%s", (user, host))
        # MariaDB keeps native passwords in Password before 10.4 and in both after.
        empty = "authentication_string = ''"
        if self._has_column("mysql", "user", "Password"):
            empty += " AND Password = ''"
        bare = [
            f"{user}@{host}"
            for user, host in self.rows(f"SELECT User, Host FROM mysql.user WHERE {empty}")
            if user not in SYSTEM_ACCOUNTS and (str(user), str(host)) in self._accounts()
        ]
        if bare:
            raise EngineError(f"accounts without a password remain: {', '.join(map(str, bare))}")


# pg_settings units that are amounts of memory, in bytes.
_MEMORY_UNITS = {"B": 1, "kB": 1024, "8kB": 8192, "16kB": 16384, "MB": 1024**2, "GB": 1024**3}
# Counters from PostgreSQL's statistics views, named view.column: per-second rates in the
# telemetry, like MySQL's Com_* and Innodb_* counters. Each part is one SELECT of (name,
# value) rows; the views changed between releases, so a part may differ per release.
_DATABASE_COUNTERS = (
    "SELECT 'pg_stat_database.' || c, v FROM (SELECT"
    " sum(xact_commit) AS xact_commit, sum(xact_rollback) AS xact_rollback,"
    " sum(blks_read) AS blks_read, sum(blks_hit) AS blks_hit,"
    " sum(tup_returned) AS tup_returned, sum(tup_fetched) AS tup_fetched,"
    " sum(tup_inserted) AS tup_inserted, sum(tup_updated) AS tup_updated,"
    " sum(tup_deleted) AS tup_deleted, sum(deadlocks) AS deadlocks,"
    " sum(temp_bytes) AS temp_bytes FROM pg_stat_database) s,"
    " LATERAL (VALUES ('xact_commit', xact_commit), ('xact_rollback', xact_rollback),"
    " ('blks_read', blks_read), ('blks_hit', blks_hit), ('tup_returned', tup_returned),"
    " ('tup_fetched', tup_fetched), ('tup_inserted', tup_inserted),"
    " ('tup_updated', tup_updated), ('tup_deleted', tup_deleted), ('deadlocks', deadlocks),"
    " ('temp_bytes', temp_bytes)) AS t(c, v)"
)
_BUFFER_WRITES_BEFORE_17 = (
    "SELECT 'pg_stat_bgwriter.' || c, v FROM pg_stat_bgwriter,"
    " LATERAL (VALUES ('checkpoints_timed', checkpoints_timed),"
    " ('checkpoints_req', checkpoints_req), ('buffers_checkpoint', buffers_checkpoint),"
    " ('buffers_clean', buffers_clean), ('buffers_backend', buffers_backend)) AS t(c, v)"
)
# 17 moved the checkpointer's counters to pg_stat_checkpointer and the backends' writes to
# pg_stat_io; they keep the names of before, so a series across 17 reads one counter.
_BUFFER_WRITES_SINCE_17 = (
    "SELECT 'pg_stat_bgwriter.' || c, v FROM pg_stat_bgwriter b, pg_stat_checkpointer k,"
    " LATERAL (VALUES ('checkpoints_timed', k.num_timed),"
    " ('checkpoints_req', k.num_requested), ('buffers_checkpoint', k.buffers_written),"
    " ('buffers_clean', b.buffers_clean), ('buffers_backend', (SELECT sum(writes)"
    " FROM pg_stat_io WHERE object = 'relation'"
    " AND backend_type NOT IN ('checkpointer', 'background writer', 'standalone backend'))))"
    " AS t(c, v)"
)
_WAL_SINCE_14 = (
    "SELECT 'pg_stat_wal.' || c, v FROM pg_stat_wal,"
    " LATERAL (VALUES ('wal_records', wal_records), ('wal_fpi', wal_fpi),"
    " ('wal_bytes', wal_bytes), ('wal_buffers_full', wal_buffers_full)) AS t(c, v)"
)
# Before 14 there is no pg_stat_wal: the WAL position's advance is the WAL written (page
# headers and segment ends included, which wal_bytes leaves out).
_WAL_BEFORE_14 = "SELECT 'pg_stat_wal.wal_bytes', pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')"
_SESSIONS_AND_STATE = (
    # Sessions running a statement, as MySQL's Threads_running counts them.
    "SELECT 'Threads_running', count(*) FILTER (WHERE state = 'active')"
    " FROM pg_stat_activity WHERE backend_type = 'client backend'"
    " UNION ALL SELECT 'Threads_connected', count(*)"
    " FROM pg_stat_activity WHERE backend_type = 'client backend'"
    # Of the connected database's tables: the benchmark's, when the probe reads them.
    " UNION ALL SELECT 'pg_stat_user_tables.n_dead_tup', coalesce(sum(n_dead_tup), 0)"
    " FROM pg_stat_user_tables"
    # WAL written since the last checkpoint's redo point: InnoDB's checkpoint age, whose
    # capacity is max_wal_size.
    " UNION ALL SELECT 'pg_checkpoint_age', pg_wal_lsn_diff(pg_current_wal_lsn(), redo_lsn)"
    " FROM pg_control_checkpoint()"
)


def postgres_status_query(server_version_num: int) -> str:
    """The status query for a release, by its server_version_num (170004 for 17.4)."""
    writes = _BUFFER_WRITES_SINCE_17 if server_version_num >= 170000 else _BUFFER_WRITES_BEFORE_17
    wal = _WAL_SINCE_14 if server_version_num >= 140000 else _WAL_BEFORE_14
    return " UNION ALL ".join((_DATABASE_COUNTERS, writes, wal, _SESSIONS_AND_STATE))


# PostgreSQL's predefined roles whose members read or write any file the server can, or run
# programs as the server (COPY ... FROM PROGRAM): a superuser's reach.
SERVER_ACCESS_ROLES = ("pg_execute_server_program", "pg_read_server_files", "pg_write_server_files")


class PostgresControl(Connection):
    """A superuser connection to a private PostgreSQL instance: over its unix socket (host
    is the socket's folder), or over TCP to a port forwarded to that socket."""

    protocol = POSTGRESQL

    def __init__(
        self,
        *,
        host: str,
        port: int,
        password: str,
        user: str = "postgres",
        database: str = "postgres",
        timeout: float = 10,
    ) -> None:
        try:
            self._conn = psycopg.connect(
                host=host,
                port=port,
                user=user,
                password=password,
                dbname=database,
                connect_timeout=max(1, int(timeout)),
                autocommit=True,
            )
        except psycopg.Error as exc:
            # Past the password exchange (or refused for want of one), it was the server
            # that said no; before it, the server was not reached.
            pgconn = exc.pgconn
            refused = pgconn is not None and (pgconn.used_password or pgconn.needs_password)
            error = LoginRefused if refused else EngineError
            raise error(
                f"cannot connect to {host} port {port} as {user}: {_first_line(exc)}"
            ) from None

    def close(self) -> None:
        with contextlib.suppress(psycopg.Error):
            self._conn.close()

    def rows(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        try:
            with self._conn.cursor() as cursor:
                cursor.execute(sql, args or None)
                return list(cursor.fetchall()) if cursor.description else []
        except psycopg.Error as exc:
            raise EngineError(f"PostgreSQL: {_first_line(exc)}") from None

    def version(self) -> str:
        """ "15.18" from "15.18 (Debian 15.18-0+deb12u1)"."""
        return str(self.rows("SHOW server_version")[0][0]).split()[0]

    def self_description(self) -> str:
        return str(self.rows("SELECT version()")[0][0])

    def benchmark_tables(self) -> int:
        # sysbench names no schema: its tables go where the role's search_path creates them.
        found = self.rows(
            "SELECT count(*) FROM information_schema.tables"
            " WHERE table_schema = current_schema() AND table_name ~ '^sbtest[0-9]+$'"
        )
        return int(str(found[0][0]))

    def unconfined(self) -> str | None:
        """A superuser reaches every database and the server's files (COPY ... TO); so do
        the members of SERVER_ACCESS_ROLES, directly or through another role, and a role
        with CREATEROLE, which may grant itself those (any role but a superuser's)."""
        user = self._conn.info.user
        [(superuser, createrole, members_of)] = self.rows(
            "SELECT rolsuper, rolcreaterole, ARRAY(SELECT b.rolname::text FROM pg_roles b"
            " WHERE b.rolname::text = ANY(%s) AND pg_has_role(current_user, b.oid, 'MEMBER')"
            " ORDER BY 1) FROM pg_roles WHERE rolname = current_user",
            (list(SERVER_ACCESS_ROLES),),
        )
        if superuser:
            return f"role {user} is a superuser"
        found = [f"has CREATEROLE (ALTER ROLE {user} NOCREATEROLE)"] if createrole else []
        for role in members_of if isinstance(members_of, list) else []:
            found.append(
                f"is a member of {role} (REVOKE {role} FROM {user}, or from the role it has "
                "it through)"
            )
        return f"role {user} " + " and ".join(found) if found else None

    def variables(self) -> dict[str, str]:
        """pg_settings, memory settings in bytes (shared_buffers 16384 x 8kB -> 134217728)."""
        found = {}
        for name, value, unit in self.rows("SELECT name, setting, unit FROM pg_settings"):
            text = "" if value is None else str(value)
            if unit in _MEMORY_UNITS and text.lstrip("-").isdigit() and int(text) >= 0:
                text = str(int(text) * _MEMORY_UNITS[str(unit)])
            found[str(name)] = text
        return found

    def status(self) -> dict[str, str]:
        query = postgres_status_query(self._conn.info.server_version)
        return {str(k): "" if v is None else str(v) for k, v in self.rows(query)}

    def create_benchmark_user(
        self,
        user: str,
        password: str,
        *,
        clients: tuple[str, ...] = ("%",),
    ) -> None:
        """The role sysbench logs in as (scram over TCP, as initdb was told) and its database,
        which it owns; no superuser rights, so no COPY to or from the server's files.
        clients are MySQL's; initdb's pg_hba.conf already limits TCP logins to this
        machine."""
        # A failing statement would be copied into the server log, password and all.
        self.execute("SET log_min_error_statement = panic")
        exists = self.rows("SELECT 1 FROM pg_roles WHERE rolname = %s", (user,))
        # DDL takes no bound parameters: the password goes in as a quoted literal.
        role = sql.SQL("{} ROLE {} LOGIN PASSWORD {}").format(
            sql.SQL("ALTER" if exists else "CREATE"), sql.Identifier(user), sql.Literal(password)
        )
        self.execute(role.as_string(self._conn))
        if not self.rows("SELECT 1 FROM pg_database WHERE datname = 'sbtest'"):
            owner = sql.Identifier(user).as_string(self._conn)
            self.execute(f"CREATE DATABASE sbtest OWNER {owner}")
        # Every role may connect to any database unless told otherwise: sysbench's to its own.
        self.execute("REVOKE CONNECT ON DATABASE postgres, template1 FROM PUBLIC")

    def secure_accounts(self, bench_user: str) -> None:
        """Check what initdb was told: every way in asks for a password, and every role that
        can log in has one."""
        lax = self.rows(
            "SELECT line_number, auth_method FROM pg_hba_file_rules"
            " WHERE auth_method NOT IN ('scram-sha-256', 'md5', 'reject') OR error IS NOT NULL"
        )
        bare = self.rows("SELECT rolname FROM pg_authid WHERE rolcanlogin AND rolpassword IS NULL")
        if lax or bare:
            found = [f"pg_hba.conf line {n}: {m}" for n, m in lax] + [str(r[0]) for r in bare]
            raise EngineError(f"logins without a password remain: {', '.join(found)}")
        others = self.rows(
            "SELECT datname FROM pg_database WHERE datallowconn AND datname <> 'sbtest'"
            " AND has_database_privilege(%s, oid, 'CONNECT')",
            (bench_user,),
        )
        if others:
            names = ", ".join(str(row[0]) for row in others)
            raise EngineError(f"{bench_user} may connect to databases besides sbtest: {names}")


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def format_pairs(values: dict[str, str]) -> str:
    """Variables or status in the tab-separated form `mysql -e 'SHOW ...'` prints."""
    return "".join(f"{name}\t{value}\n" for name, value in sorted(values.items()))
