"""What differs between database families when oltplab runs a private instance: the files
a server keeps, how its datadir is initialised and its accounts secured, its command
line, how it shuts down cleanly and how the control connection reaches it.

A profile says what to do, never where: the instance runs its commands and writes its
files through a host (this machine or an SSH host), so every family runs on every host.
"""

from __future__ import annotations

import hashlib
import signal
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import ClassVar

from oltplab.base.errors import EngineError
from oltplab.engines.config import ServerPaths, parse_version
from oltplab.engines.control import Control, PostgresControl, accounts_sql
from oltplab.engines.hosts import Host
from oltplab.engines.supplier import Distribution, cache_root


@dataclass(frozen=True)
class Layout:
    """The files of one instance, in its work folder; their names are its family's."""

    work: Path
    family: Family
    # On an SSH host the socket is in the work folder: the cache is on this machine.
    socket_in_work: bool = False

    @property
    def datadir(self) -> Path:
        return self.work / "datadir"

    @property
    def snapshot(self) -> Path:
        return self.work / "snapshot"

    @property
    def cnf(self) -> Path:
        return self.work / self.family.cnf_name

    @property
    def error_log(self) -> Path:
        return self.work / self.family.log_name

    @property
    def pid_file(self) -> Path:
        return self.work / self.family.pid_name

    @property
    def server_output(self) -> Path:
        """Where the server's stdout and stderr go."""
        return self.work / self.family.output_name

    @property
    def tmpdir(self) -> Path:
        return self.work / "tmp"

    @property
    def secure_files(self) -> Path:
        """The only folder the server may read or write files in (secure_file_priv); empty."""
        return self.work / "files"

    @property
    def accounts_file(self) -> Path:
        """SQL run once, from --init-file, at the first start; removed once it ran."""
        return self.work / "accounts.sql"

    @property
    def password_file(self) -> Path:
        """The superuser's password, for initdb to read; removed once it ran."""
        return self.work / "superuser.pw"

    @property
    def client_options(self) -> Path:
        """[client] options for the tools run against the instance (pt-mysql-summary)."""
        return self.work / "client.cnf"

    @property
    def socket(self) -> Path:
        if self.socket_in_work:
            return self.family.socket_in(self.work)
        return self.family.socket(self.socket_folder, self.socket_key)

    @property
    def socket_folder(self) -> Path:
        """Here, sockets live in the cache, not the work folder: a socket path may not
        exceed 107 bytes, which a results directory deep in a tree easily does."""
        return self.work if self.socket_in_work else cache_root() / "sock"

    @property
    def socket_key(self) -> str:
        return hashlib.sha256(str(self.work.resolve()).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ControlRoute:
    """Where the control connection goes: the server's unix socket on this machine, or a
    local TCP port forwarded to it."""

    socket: Path | None = None
    port: int = 0


class Family:
    """What every family shares; the subclasses say what differs."""

    client_protocol: ClassVar[str]
    stop_signal: ClassVar[signal.Signals] = signal.SIGTERM  # a clean shutdown
    cnf_name, log_name, pid_name = "my.cnf", "mysqld.err", "mysqld.pid"
    # Where the server's own output goes, beside its error log.
    output_name: ClassVar[str] = "mysqld.out"

    def __init__(self, distribution: Distribution) -> None:
        self.distribution = distribution

    def socket(self, folder: Path | PurePosixPath, key: str) -> Path:
        return Path(folder) / f"{key}.sock"

    def socket_in(self, work: Path) -> Path:
        """The socket when it lives in the work folder (on an SSH host)."""
        return work / "mysqld.sock"

    def socket_file(self, socket: Path, port: int) -> Path:
        return socket

    def private_folders(self, layout: Layout) -> list[Path]:
        """Folders only the server's user may enter (besides the datadir)."""
        return [layout.secure_files]

    @property
    def makes_its_datadir(self) -> bool:
        """Whether initialisation creates the datadir (else it must be there, empty)."""
        return False

    def initialise_command(self, layout: Layout, machine: Host) -> list[str]:
        raise NotImplementedError

    def initialise_secrets(self, layout: Layout, password: str) -> dict[Path, str]:
        """Files initialisation reads a secret from (written before, removed after)."""
        return {}

    def first_start_secrets(self, layout: Layout, password: str, machine: Host) -> dict[Path, str]:
        """Files the first start after initialisation reads a secret from."""
        return {}

    def first_start_options(self, layout: Layout) -> list[str]:
        return []

    def server_command(self, layout: Layout, machine: Host, options: list[str]) -> list[str]:
        raise NotImplementedError

    def paths(self, layout: Layout, port: int, bind_address: str) -> ServerPaths:
        dist = self.distribution
        return ServerPaths(
            basedir=dist.basedir,
            datadir=layout.datadir,
            socket=layout.socket,
            port=port,
            pid_file=layout.pid_file,
            error_log=layout.error_log,
            tmpdir=layout.tmpdir,
            secure_files=layout.secure_files,
            lc_messages_dir=dist.messages_dir,
            bind_address=bind_address,
        )

    def control(self, route: ControlRoute, password: str) -> Control | PostgresControl:
        raise NotImplementedError

    def client_rules(self, clients: tuple[str, ...]) -> tuple[str, str] | None:
        """A file name in the datadir and lines that let these addresses log in over TCP;
        None: the accounts themselves say which hosts they come from."""
        return None


class MysqlFamily(Family):
    """MySQL, Percona Server and MariaDB: mysqld (or mariadbd) with a my.cnf."""

    client_protocol: ClassVar[str] = "mysql"

    @property
    def makes_its_datadir(self) -> bool:
        return self.distribution.family == "mariadb"

    def initialise_command(self, layout: Layout, machine: Host) -> list[str]:
        """mariadb-install-db makes the datadir itself; mysqld --initialize wants it empty.
        Both leave root without a password; the first start gives it one (accounts_sql)."""
        dist = self.distribution
        cnf = f"--defaults-file={layout.cnf}"
        if dist.family != "mariadb":
            return machine.unprivileged([str(dist.server), cnf, "--initialize-insecure"])
        if dist.install_db is None:
            raise EngineError(f"engine {dist.engine}: no mariadb-install-db script found")
        version = parse_version(dist.version)
        # Before 10.4 root logs in with a password anyway, and before 10.3 the script has
        # no way to leave out the test database (then an empty one is left behind).
        options = ["--auth-root-authentication-method=normal"] if version >= (10, 4) else []
        options += ["--skip-test-db"] if version >= (10, 3) else []
        # 10.1's script stops where it cannot resolve the host name (some builds leave out
        # resolveip); --force goes on, naming hosts by address, which nothing here needs.
        options += ["--force"] if version < (10, 2) else []
        return machine.unprivileged(
            [str(dist.install_db), cnf, f"--basedir={dist.basedir}", *options]
        )

    def first_start_secrets(self, layout: Layout, password: str, machine: Host) -> dict[Path, str]:
        """The SQL that secures the accounts before the first connection (--init-file)."""
        dist = self.distribution
        sql = accounts_sql(dist.family, parse_version(dist.version), password, machine.hostname())
        return {layout.accounts_file: sql}

    def first_start_options(self, layout: Layout) -> list[str]:
        return [f"--init-file={layout.accounts_file}"]

    def server_command(self, layout: Layout, machine: Host, options: list[str]) -> list[str]:
        server = str(self.distribution.server)
        return machine.unprivileged([server, f"--defaults-file={layout.cnf}", *options])

    def control(self, route: ControlRoute, password: str) -> Control:
        if route.socket is not None:
            return Control(socket=route.socket, password=password, timeout=5)
        return Control(host="127.0.0.1", port=route.port, password=password, timeout=5)


class PostgresFamily(Family):
    """PostgreSQL: initdb, then postgres with its own postgresql.conf.

    Every login asks for a password: the superuser's is the control password, given to
    initdb in a file that is removed once it has been read; there is no other account to
    secure at the first start.
    """

    client_protocol: ClassVar[str] = "postgresql"
    # SIGTERM would wait for every client to leave; SIGINT is PostgreSQL's fast shutdown:
    # clients are disconnected, then a clean checkpoint.
    stop_signal: ClassVar[signal.Signals] = signal.SIGINT
    cnf_name, log_name, pid_name = "postgresql.conf", "postgres.log", "postgres.pid"
    output_name: ClassVar[str] = "postgres.log"  # postgres logs to its stderr

    def socket(self, folder: Path | PurePosixPath, key: str) -> Path:
        """PostgreSQL takes a folder for its socket (it names the file .s.PGSQL.<port>)."""
        return Path(folder) / f"pg-{key}"

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
        return machine.unprivileged(
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
            ]
        )

    def server_command(self, layout: Layout, machine: Host, options: list[str]) -> list[str]:
        server = str(self.distribution.server)
        config = f"config_file={layout.cnf}"
        return machine.unprivileged([server, "-D", str(layout.datadir), "-c", config, *options])

    def paths(self, layout: Layout, port: int, bind_address: str) -> ServerPaths:
        paths = super().paths(layout, port, bind_address)
        return ServerPaths(**{**paths.__dict__, "lc_messages_dir": None})

    def control(self, route: ControlRoute, password: str) -> PostgresControl:
        if route.socket is not None:
            return PostgresControl(host=str(route.socket), port=route.port, password=password)
        return PostgresControl(host="127.0.0.1", port=route.port, password=password)

    def client_rules(self, clients: tuple[str, ...]) -> tuple[str, str] | None:
        """pg_hba.conf lines for sysbench's machine: initdb allows the loopback only, which
        is all a server on sysbench's own machine needs ("%": any host, the loopback)."""
        addresses = [a for a in clients if a != "%"]
        if not addresses:
            return None
        lines = "".join(f"host all all {address}/32 scram-sha-256\n" for address in addresses)
        return "pg_hba.conf", lines


def family_of(distribution: Distribution) -> Family:
    if distribution.family == "postgresql":
        return PostgresFamily(distribution)
    return MysqlFamily(distribution)
