"""The family protocol: what differs between database families, and the files of a
private instance.

A family says what to do, never where: the instance runs its commands and writes its files
through a host (this machine or an SSH host), so every family runs on every host.
"""

from __future__ import annotations

import hashlib
import signal
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import ClassVar

from oltplab.base.wire import WireProtocol
from oltplab.engines.cache import cache_root, engines_root
from oltplab.engines.config import ServerPaths, Setting
from oltplab.engines.control import Connection
from oltplab.engines.distribution import Distribution
from oltplab.engines.hosts import Host, ServerView
from oltplab.engines.identity import server_uid
from oltplab.engines.server import SYSBENCH_OPTIONS, vault
from oltplab.spec import ResolvedIntent


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
    def vault(self) -> Path:
        """Root's own folder on the server's machine (engines/server.py), never handed over."""
        return vault(self.work)

    @property
    def client_options(self) -> Path:
        """[client] options for the tools run against the instance (pt-mysql-summary)."""
        return self.vault / "client.cnf"

    @property
    def sysbench_options(self) -> Path:
        """sysbench's connection options, password included, while sysbench runs (on the
        machine sysbench runs on, so in the local vault)."""
        return self.vault / SYSBENCH_OPTIONS

    @property
    def secret_files(self) -> tuple[Path, ...]:
        """The files on the server's machine that hold a password while a tool reads it: a
        run killed while one existed leaves it, and the next start removes it."""
        return (self.accounts_file, self.password_file, self.client_options)

    @property
    def socket(self) -> Path:
        if self.socket_in_work:
            return self.family.socket_in(self.work)
        return self.family.socket(self.socket_folder, self.socket_key)

    @property
    def socket_home(self) -> Path:
        """The folder holding this instance's socket and nothing else of anyone's."""
        return self.family.socket_home(self.socket)

    @property
    def server_uid(self) -> int:
        return server_uid(self.socket_key)

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
    # PostgreSQL's table statistics are per database: the probe reads the benchmark's.
    # MySQL's status is global; it connects to none.
    database: str | None = None


# The database sysbench's tables live in, on every engine.
BENCHMARK_DATABASE = "sbtest"


@dataclass(frozen=True)
class SelfDescription:
    """What a server of a family says of itself: each family gives one, and the family
    contract (tests/support/family_contract.py) checks that the family recognises it."""

    banner: str  # its binary's `--version` output, after the binary's own name
    said: str  # VERSION() and @@version_comment of a running server
    version: str  # the release both name


class Family:
    """One database family: everything oltplab does that differs between families. A family
    is one module with one subclass of this class, registered by name in
    engines/families.py; tests/support/family_contract.py is what every family must pass.

    What a family says about itself and its configuration needs no binaries (class
    methods: naming, identification, translating the intent); running an instance needs
    its distribution (methods of an instance made from one)."""

    name: ClassVar[str]  # as specs, the catalog and results name it
    client_protocol: ClassVar[
        WireProtocol
    ]  # the wire protocol: sysbench's driver and the control's
    # Words that name the family in result trees (`percona`, `ps`), the name included.
    aliases: ClassVar[tuple[str, ...]] = ()
    stop_signal: ClassVar[signal.Signals] = signal.SIGTERM  # a clean shutdown
    cnf_name, log_name, pid_name = "my.cnf", "mysqld.err", "mysqld.pid"
    # Where the server's own output goes, beside its error log.
    output_name: ClassVar[str] = "mysqld.out"
    example: ClassVar[SelfDescription]
    # Where a basedir holds the family's files, each most preferred first: the server
    # binary, the script that initialises a datadir, and the folders that may hold the
    # server's error messages (english/errmsg.sys).
    server_binaries: ClassVar[tuple[str, ...]]
    install_scripts: ClassVar[tuple[str, ...]] = ()
    messages_folders: ClassVar[tuple[str, ...]] = ()

    # --- what the family says about itself ------------------------------------------------

    @classmethod
    def claims(cls, said: str) -> bool:
        """Whether a server that describes itself this way (its `--version` output, or
        VERSION() and @@version_comment; lower case) is of this family. Of several families
        that claim a server, the most specific (a subclass) is it."""
        raise NotImplementedError

    @classmethod
    def version_in(cls, banner: str) -> str | None:
        """The release a server binary's `--version` output names, if it is this family's."""
        raise NotImplementedError

    @classmethod
    def release(cls, version: str) -> str:
        """The release in what VERSION() returns (`10.11.5-MariaDB-log` -> 10.11.5)."""
        return version.split("-")[0]

    @classmethod
    def debian_home(cls, package: str) -> Path | None:
        """Where an installed Debian package of this family keeps its programs, when the
        package is the family's and that is not /usr (PostgreSQL's, by major version)."""
        return None

    # --- its configuration ------------------------------------------------------------------

    @classmethod
    def tunables(cls, version: tuple[int, ...], intent: ResolvedIntent) -> list[Setting]:
        """The intent in this family's and version's options, each with the value the live
        server must show for it."""
        raise NotImplementedError

    @classmethod
    def server_settings(cls, version: tuple[int, ...], paths: ServerPaths) -> list[Setting]:
        """Where the private instance lives and listens; never verified (not tunables)."""
        raise NotImplementedError

    @classmethod
    def option_file(
        cls, engine: str, tier: str, server: list[Setting], tunables: list[Setting]
    ) -> str:
        """The whole option file; later lines win, so engine extras override the intent."""
        raise NotImplementedError

    # --- an instance of it --------------------------------------------------------------------

    def __init__(self, distribution: Distribution) -> None:
        self.distribution = distribution

    def socket(self, folder: Path | PurePosixPath, key: str) -> Path:
        # A folder per instance: the server, as its own uid, creates its socket in it.
        return Path(folder) / key / "mysqld.sock"

    def socket_home(self, socket: Path) -> Path:
        return socket.parent

    def server_view(self, layout: Layout) -> ServerView:
        """The server's own uid, and what it may reach: its folders and its binaries."""
        dist = self.distribution
        # A fetched engine's whole folder: a newer suite's programs take their loader and
        # libraries from beside usr/, the basedir.
        fetched = [a for a in dist.basedir.parents if a.parent == engines_root()]
        wanted = [layout.work, layout.socket_home, *fetched, dist.basedir, dist.server.parent]
        wanted += [
            p.parent if p.is_file() else p for p in (dist.install_db, dist.messages_dir) if p
        ]
        folders = [
            folder
            for folder in dict.fromkeys(wanted)
            if not any(folder != other and folder.is_relative_to(other) for other in wanted)
        ]
        return ServerView(layout.server_uid, tuple(folders))

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

    def initialise_input(self, layout: Layout) -> str | None:
        """What the initialisation command reads on its standard input, if anything."""
        return None

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

    def control(self, route: ControlRoute, password: str) -> Connection:
        raise NotImplementedError

    @classmethod
    def client(cls, host: str, port: int, user: str, password: str) -> Connection:
        """A connection as sysbench makes it (its user, over TCP): to time the round trip."""
        raise NotImplementedError

    def client_rules(self, clients: tuple[str, ...]) -> tuple[str, str] | None:
        """A file name in the datadir and lines that let these addresses log in over TCP;
        None: the accounts themselves say which hosts they come from."""
        return None
