"""PostgreSQL: initdb, then postgres with its own postgresql.conf, spoken to over the
PostgreSQL protocol (sysbench's pgsql driver)."""

from __future__ import annotations

import re
import signal
from pathlib import Path, PurePosixPath
from typing import ClassVar

from oltplab.base.wire import POSTGRESQL, WireProtocol
from oltplab.engines.config import ServerPaths, Setting, canonical, plain
from oltplab.engines.control import PostgresControl
from oltplab.engines.family import (
    BENCHMARK_DATABASE,
    ControlRoute,
    Family,
    Layout,
    SelfDescription,
)
from oltplab.engines.hosts import Host
from oltplab.spec import ResolvedIntent
from oltplab.spec.fields import Scalar

_BANNER = re.compile(r"\(PostgreSQL\)\s+(\d[\w.]*)")
_PACKAGE = re.compile(r"^postgresql-(\d+)$")
# max_wal_size must hold at least two 16 MB WAL segments.
MIN_WAL_SIZE = 32 * 1024**2


def _setting(option: str, value: Scalar, expected: Scalar) -> Setting:
    return Setting(option, value, option, canonical(expected))


class PostgresFamily(Family):
    """PostgreSQL: initdb, then postgres with its own postgresql.conf.

    Every login asks for a password: the superuser's is the control password, given to
    initdb in a file that is removed once it has been read; there is no other account to
    secure at the first start.
    """

    name: ClassVar[str] = "postgresql"
    client_protocol: ClassVar[WireProtocol] = POSTGRESQL
    aliases: ClassVar[tuple[str, ...]] = ("postgresql", "postgres", "pgsql")
    # SIGTERM would wait for every client to leave; SIGINT is PostgreSQL's fast shutdown:
    # clients are disconnected, then a clean checkpoint.
    stop_signal: ClassVar[signal.Signals] = signal.SIGINT
    cnf_name, log_name, pid_name = "postgresql.conf", "postgres.log", "postgres.pid"
    output_name: ClassVar[str] = "postgres.log"  # postgres logs to its stderr
    example = SelfDescription(
        "(PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)",
        "PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu",
        "15.18",
    )
    server_binaries: ClassVar[tuple[str, ...]] = ("bin/postgres",)
    install_scripts: ClassVar[tuple[str, ...]] = ("bin/initdb",)

    @classmethod
    def claims(cls, said: str) -> bool:
        return "postgresql" in said

    @classmethod
    def version_in(cls, banner: str) -> str | None:
        """`postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)`"""
        match = _BANNER.search(banner)
        return match.group(1) if match else None

    @classmethod
    def debian_home(cls, package: str) -> Path | None:
        # Debian keeps each major version's programs apart.
        major = _PACKAGE.match(package)
        return Path("/usr/lib/postgresql") / major.group(1) if major else None

    @classmethod
    def tunables(cls, version: tuple[int, ...], intent: ResolvedIntent) -> list[Setting]:
        """The intent in postgresql.conf's terms: the buffer pool is shared_buffers, the redo
        capacity max_wal_size, durability synchronous_commit, the doublewrite buffer's job
        (torn pages) full_page_writes, the binary log's (a log others can replay) wal_level.

        Sizes are written in kB and MB and expected back in bytes: oltplab reads pg_settings
        with its units applied. InnoDB's io_capacity, sync_binlog and binlog_format have no
        counterpart and are not written; the report shows each engine's own settings.
        """
        wal = max(MIN_WAL_SIZE, intent.redo_capacity)
        settings = [
            _setting("shared_buffers", f"{intent.buffer_pool // 1024}kB", intent.buffer_pool),
            _setting("max_wal_size", f"{wal // 1024**2}MB", wal // 1024**2 * 1024**2),
            # 0 and 2 both give up durability of the last commits for speed, as async
            # commit does; fsync stays on in every tier so a crash never corrupts the datadir.
            _setting(
                "synchronous_commit",
                intent.flush_log_at_trx_commit == 1,
                intent.flush_log_at_trx_commit == 1,
            ),
            _setting("full_page_writes", intent.doublewrite, intent.doublewrite),
            _setting("max_connections", intent.max_connections, intent.max_connections),
        ]
        if intent.binlog:
            settings.append(_setting("wal_level", "replica", "replica"))
        else:
            # wal_level minimal refuses to start while WAL senders are allowed.
            settings += [
                _setting("wal_level", "minimal", "minimal"),
                _setting("max_wal_senders", 0, 0),
            ]
        settings += [
            plain(option, value) for option, value in intent.extra.get("postgresql", {}).items()
        ]
        return settings

    @classmethod
    def server_settings(cls, version: tuple[int, ...], paths: ServerPaths) -> list[Setting]:
        """Where the private PostgreSQL instance listens; never verified (not tunables)."""
        lines: list[tuple[str, Scalar]] = [
            ("port", paths.port),
            ("listen_addresses", paths.bind_address),
            ("unix_socket_directories", str(paths.socket)),
            ("logging_collector", False),  # the log goes to the server's stderr: our log file
            ("external_pid_file", str(paths.pid_file)),  # how a stale server is found again
        ]
        if version < (14,):
            # Logins are scram (initdb's --auth): before 14 a role's password is stored as
            # md5 unless told, and initdb's own postgresql.conf, which says so, is not read.
            lines.append(("password_encryption", "scram-sha-256"))
        return [Setting(option, value, None, None) for option, value in lines]

    @classmethod
    def option_file(
        cls, engine: str, tier: str, server: list[Setting], tunables: list[Setting]
    ) -> str:
        """postgresql.conf; later lines win, so engine extras can override the intent."""

        def line(setting: Setting) -> str:
            value = setting.value
            if isinstance(value, str):
                value = "'" + value.replace("'", "''") + "'"
            elif isinstance(value, bool):
                value = "on" if value else "off"
            return f"{setting.option} = {value}"

        out = [
            f"# Generated by oltplab for engine {engine}, tier {tier}.",
            *(line(setting) for setting in server),
            "",
            "# intent, translated for PostgreSQL",
            *(line(setting) for setting in tunables),
            "",
        ]
        return "\n".join(out)

    def socket(self, folder: Path | PurePosixPath, key: str) -> Path:
        """PostgreSQL takes a folder for its socket (it names the file .s.PGSQL.<port>)."""
        return Path(folder) / f"pg-{key}"

    def socket_home(self, socket: Path) -> Path:
        return socket

    def socket_in(self, work: Path) -> Path:
        # The work folder itself: socket paths end at 107 bytes, the port's file name is long.
        return work

    def socket_file(self, socket: Path, port: int) -> Path:
        return socket / f".s.PGSQL.{port}"

    def private_folders(self, layout: Layout) -> list[Path]:
        return [layout.secure_files, layout.socket]

    @property
    def makes_its_datadir(self) -> bool:
        return True

    def initialise_secrets(self, layout: Layout, password: str) -> dict[Path, str]:
        return {layout.password_file: password + "\n"}

    def initialise_command(self, layout: Layout, machine: Host) -> list[str]:
        install_db = self.distribution.install_db
        assert install_db is not None, "a PostgreSQL distribution has bin/initdb"
        return machine.as_server(
            [
                str(install_db),
                f"--pgdata={layout.datadir}",
                "--username=postgres",
                f"--pwfile={layout.password_file}",
                # Over the socket and over TCP alike, every login gives its password.
                "--auth-local=scram-sha-256",
                "--auth-host=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",  # the snapshot is taken after a clean shutdown, which syncs
            ],
            self.server_view(layout),
        )

    def server_command(self, layout: Layout, machine: Host, options: list[str]) -> list[str]:
        server = str(self.distribution.server)
        config = f"config_file={layout.cnf}"
        return machine.as_server(
            [server, "-D", str(layout.datadir), "-c", config, *options], self.server_view(layout)
        )

    def paths(self, layout: Layout, port: int, bind_address: str) -> ServerPaths:
        paths = super().paths(layout, port, bind_address)
        return ServerPaths(**{**paths.__dict__, "lc_messages_dir": None})

    def control(self, route: ControlRoute, password: str) -> PostgresControl:
        host = str(route.socket) if route.socket is not None else "127.0.0.1"
        database = route.database or "postgres"
        return PostgresControl(host=host, port=route.port, password=password, database=database)

    def client_rules(self, clients: tuple[str, ...]) -> tuple[str, str] | None:
        """pg_hba.conf lines for sysbench's machine: initdb allows the loopback only, which
        is all a server on sysbench's own machine needs ("%": any host, the loopback)."""
        addresses = [a for a in clients if a != "%"]
        if not addresses:
            return None
        lines = "".join(f"host all all {address}/32 scram-sha-256\n" for address in addresses)
        return "pg_hba.conf", lines

    @classmethod
    def client(cls, host: str, port: int, user: str, password: str) -> PostgresControl:
        # The benchmark role may connect to its own database only.
        return PostgresControl(
            host=host, port=port, user=user, password=password, database=BENCHMARK_DATABASE
        )
