"""MySQL: mysqld with a my.cnf, initialised by `mysqld --initialize-insecure` (before 5.7:
`mysqld --bootstrap` fed the system tables' SQL, as mysql_install_db did), spoken to
over the MySQL protocol. Percona Server and MariaDB are subclasses that say what differs.

The same intent means different option names across MySQL 5.5, 5.7, 8.0 before and
after 8.0.30 and 8.4+; options removed in a version are never written. Every setting carries
the value `SHOW GLOBAL VARIABLES` must show once the server runs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

from oltplab.base.errors import EngineError
from oltplab.base.wire import MYSQL, WireProtocol
from oltplab.engines.config import ServerPaths, Setting, parse_version, plain
from oltplab.engines.control import (
    INSTALLED_HOSTS,
    NATIVE_PASSWORD,
    NO_BINARY_LOG,
    Control,
    quote,
)
from oltplab.engines.family import ControlRoute, Family, Layout, SelfDescription
from oltplab.engines.hosts import Host
from oltplab.spec import ResolvedIntent
from oltplab.spec.fields import Scalar

GIB = 1024**3
_VER = re.compile(r"Ver\s+(\S+)")


class MysqlFamily(Family):
    """MySQL, and what every family of its protocol shares."""

    name: ClassVar[str] = "mysql"
    client_protocol: ClassVar[WireProtocol] = MYSQL
    aliases: ClassVar[tuple[str, ...]] = ("mysql",)
    example = SelfDescription(
        " Ver 8.0.31 for Linux on x86_64 (MySQL Community Server - GPL)",
        "8.0.31 MySQL Community Server - GPL",
        "8.0.31",
    )
    server_binaries: ClassVar[tuple[str, ...]] = ("bin/mysqld", "sbin/mysqld")
    # Recorded with the distribution; MySQL initialises with mysqld itself.
    install_scripts: ClassVar[tuple[str, ...]] = (
        "scripts/mysql_install_db",
        "bin/mysql_install_db",
    )
    messages_folders: ClassVar[tuple[str, ...]] = ("share", "share/mysql")

    # --- what the family says about itself ------------------------------------------------

    @classmethod
    def claims(cls, said: str) -> bool:
        # Any server of the MySQL protocol is at least MySQL-compatible: MySQL is what a
        # server is when no more specific family claims it.
        return True

    @classmethod
    def version_in(cls, banner: str) -> str | None:
        """`mysqld  Ver 8.0.31 for Linux on x86_64 (MySQL Community Server - GPL)`"""
        match = _VER.search(banner)
        return cls.release(match.group(1)) if match else None

    # --- its configuration ----------------------------------------------------------------

    @classmethod
    def tunables(cls, version: tuple[int, ...], intent: ResolvedIntent) -> list[Setting]:
        settings = [plain("innodb_buffer_pool_size", intent.buffer_pool)]
        if cls.has_buffer_pool_instances(version):
            instances = 8 if intent.buffer_pool >= 8 * GIB else 1
            settings.append(plain("innodb_buffer_pool_instances", instances))
        settings += cls.redo_settings(version, intent.redo_capacity)
        settings.append(plain("innodb_flush_log_at_trx_commit", intent.flush_log_at_trx_commit))
        if intent.binlog:
            settings += [
                Setting("log_bin", "binlog", "log_bin", "ON"),
                plain("server_id", 1),
                plain("sync_binlog", intent.sync_binlog),
                plain("binlog_format", intent.binlog_format),
            ]
        else:
            settings.append(Setting("skip_log_bin", None, "log_bin", "OFF"))
        settings += [
            plain("innodb_doublewrite", intent.doublewrite),
            plain("innodb_io_capacity", intent.io_capacity),
            plain("max_connections", intent.max_connections),
            plain("character_set_server", intent.charset),
        ]
        if cls.has_io_capacity_max(version):
            settings.append(plain("innodb_io_capacity_max", intent.io_capacity_max))
        if intent.flush_method:
            settings.append(plain("innodb_flush_method", intent.flush_method))
        if cls.has_query_cache(version):
            settings += [
                Setting("query_cache_type", 0, "query_cache_type", "OFF"),
                plain("query_cache_size", 0),
            ]
        if cls.has_buffer_pool_dump(version):
            # A buffer pool dumped at the prepare shutdown would warm every tier from the
            # snapshot.
            settings += [
                plain("innodb_buffer_pool_dump_at_shutdown", False),
                plain("innodb_buffer_pool_load_at_startup", False),
            ]
        settings += [
            # sysbench prepares statements per thread and table; the default runs out at
            # high counts.
            plain("max_prepared_stmt_count", 1_000_000),
            *cls.fixed_settings(version),
        ]
        for option, value in intent.extra.get(cls.name, {}).items():
            settings.append(plain(option.replace("-", "_"), value))
        return settings

    @classmethod
    def fixed_settings(cls, version: tuple[int, ...]) -> list[Setting]:
        """Defaults that changed between releases, written out so that every release runs
        the same way (a tier's [config.extra] still overrides them)."""
        return []

    @classmethod
    def has_buffer_pool_instances(cls, version: tuple[int, ...]) -> bool:
        return True

    @classmethod
    def has_buffer_pool_dump(cls, version: tuple[int, ...]) -> bool:
        return version >= (5, 6)

    @classmethod
    def has_io_capacity_max(cls, version: tuple[int, ...]) -> bool:
        return version >= (5, 6)

    @classmethod
    def initialises_itself(cls, version: tuple[int, ...]) -> bool:
        """Whether the server has --initialize (MySQL 5.7 on) and CREATE USER IF NOT EXISTS."""
        return version >= (5, 7)

    @classmethod
    def has_query_cache(cls, version: tuple[int, ...]) -> bool:
        return version < (8, 0)

    @classmethod
    def has_x_plugin(cls, version: tuple[int, ...]) -> bool:
        return version >= (8, 0)

    @classmethod
    def redo_settings(cls, version: tuple[int, ...], capacity: int) -> list[Setting]:
        """The same total redo capacity, spelled the way each version sizes its redo log."""
        if version >= (8, 0, 30):
            return [plain("innodb_redo_log_capacity", capacity)]
        return [
            plain("innodb_log_file_size", capacity // 2),
            plain("innodb_log_files_in_group", 2),
        ]

    @classmethod
    def server_settings(cls, version: tuple[int, ...], paths: ServerPaths) -> list[Setting]:
        lines: list[tuple[str, Scalar | None]] = [
            ("basedir", str(paths.basedir)),
            ("datadir", str(paths.datadir)),
            ("port", paths.port),
            ("socket", str(paths.socket)),
            ("pid_file", str(paths.pid_file)),
            ("log_error", str(paths.error_log)),
            ("tmpdir", str(paths.tmpdir)),
            ("bind_address", paths.bind_address),
            ("skip_name_resolve", None),
            # SELECT ... INTO OUTFILE and LOAD DATA INFILE reach this empty folder only.
            ("secure_file_priv", str(paths.secure_files)),
        ]
        if paths.lc_messages_dir:
            lines.append(("lc_messages_dir", str(paths.lc_messages_dir)))
        if cls.has_x_plugin(version):
            lines.append(("mysqlx", "OFF"))
        return [Setting(option, value, None, None) for option, value in lines]

    @classmethod
    def option_file(
        cls, engine: str, tier: str, server: list[Setting], tunables: list[Setting]
    ) -> str:
        out = [
            f"# Generated by oltplab for engine {engine}, tier {tier}.",
            "[mysqld]",
            *(setting.line() for setting in server),
            "",
            "# intent, translated for this family and version",
            *(setting.line() for setting in tunables),
            "",
        ]
        return "\n".join(out)

    # --- its accounts -----------------------------------------------------------------------

    @classmethod
    def accounts_sql(cls, version: tuple[int, ...], password: str, hostname: str) -> str:
        """SQL the server runs from --init-file on its first start, before it accepts any
        connection: the install step's passwordless accounts are gone and root@localhost
        has the control password, so there is no moment at which they could be used. None
        of it goes to the binary log, which would keep the password in the datadir (and the
        snapshot) in plain text."""
        return NO_BINARY_LOG + ";\n" + cls._accounts_statements(version, password, hostname)

    @classmethod
    def _accounts_statements(cls, version: tuple[int, ...], password: str, hostname: str) -> str:
        if not cls.initialises_itself(version):
            # No DROP USER IF EXISTS, nor ALTER USER: the grant tables as such, one
            # statement a line (as --init-file reads them then).
            return (
                "DELETE FROM mysql.user WHERE NOT (User = 'root' AND Host = 'localhost');\n"
                "DELETE FROM mysql.proxies_priv WHERE NOT (User = 'root' AND Host = 'localhost');\n"
                "DELETE FROM mysql.db WHERE User = '';\n"
                f"{cls.set_root_password(version, password)}\nFLUSH PRIVILEGES;\n"
            )
        hosts = [*INSTALLED_HOSTS, hostname]
        drops = [f"'root'@{quote(h)}" for h in hosts if h != "localhost"]
        drops += [f"''@{quote(h)}" for h in hosts]
        set_password = cls.set_root_password(version, password)
        return f"DROP USER IF EXISTS {', '.join(drops)};\n{set_password}\nFLUSH PRIVILEGES;\n"

    @classmethod
    def set_root_password(cls, version: tuple[int, ...], password: str) -> str:
        if not cls.initialises_itself(version):
            return f"SET PASSWORD FOR 'root'@'localhost' = PASSWORD({quote(password)});"
        return f"ALTER USER 'root'@'localhost' {cls.password_clause(version)} {quote(password)};"

    @classmethod
    def password_clause(cls, version: tuple[int, ...]) -> str:
        """How accounts get their password. Native passwords suit every client sysbench may
        be built with; MySQL 8.4 disables the plugin and 9.0 removed it, so from 8.4 on the
        default (caching_sha2_password) is used."""
        if not cls.initialises_itself(version):
            return "IDENTIFIED BY"  # native was the only kind, and the clause had no plugin
        return NATIVE_PASSWORD if version < (8, 4) else "IDENTIFIED BY"

    # --- an instance of it --------------------------------------------------------------------

    def initialise_command(self, layout: Layout, machine: Host) -> list[str]:
        """mysqld --initialize wants an empty datadir and leaves root without a password;
        the first start gives it one (accounts_sql)."""
        dist = self.distribution
        cnf = f"--defaults-file={layout.cnf}"
        view = self.server_view(layout)
        if not self.initialises_itself(parse_version(dist.version)):
            return machine.as_server([str(dist.server), cnf, "--bootstrap"], view)
        return machine.as_server([str(dist.server), cnf, "--initialize-insecure"], view)

    def initialise_input(self, layout: Layout) -> str | None:
        """What `mysqld --bootstrap` reads: the system tables and their first rows, from the
        SQL files the release ships (share/), as its mysql_install_db fed them."""
        dist = self.distribution
        if self.initialises_itself(parse_version(dist.version)):
            return None
        share = dist.basedir / "share"
        parts = ["mysql_system_tables.sql", "mysql_system_tables_data.sql"]
        missing = [name for name in parts if not (share / name).is_file()]
        if missing:
            raise EngineError(
                f"engine {dist.engine}: {share / missing[0]} not found: MySQL "
                f"{dist.version} is initialised from the SQL files of its share/ folder"
            )
        sql = [(share / name).read_text(errors="replace") for name in parts]
        return "CREATE DATABASE mysql;\nUSE mysql;\n" + "\n".join(sql)

    def first_start_secrets(self, layout: Layout, password: str, machine: Host) -> dict[Path, str]:
        """The SQL that secures the accounts before the first connection (--init-file)."""
        version = parse_version(self.distribution.version)
        return {layout.accounts_file: self.accounts_sql(version, password, machine.hostname())}

    def first_start_options(self, layout: Layout) -> list[str]:
        return [f"--init-file={layout.accounts_file}"]

    def server_command(self, layout: Layout, machine: Host, options: list[str]) -> list[str]:
        server = str(self.distribution.server)
        command = [server, f"--defaults-file={layout.cnf}", *options]
        return machine.as_server(command, self.server_view(layout))

    def control(self, route: ControlRoute, password: str) -> Control:
        version = parse_version(self.distribution.version)
        return Control(
            socket=route.socket,
            host="127.0.0.1",
            port=route.port,
            password=password,
            timeout=5,
            password_clause=self.password_clause(version),
            grant_creates_user=not self.initialises_itself(version),
        )

    @classmethod
    def client(cls, host: str, port: int, user: str, password: str) -> Control:
        return Control(host=host, port=port, user=user, password=password)
