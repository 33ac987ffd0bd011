"""A private PostgreSQL instance: initdb, postgres on its own port and socket directory.

PostgreSQL refuses to run as root. When oltplab runs as root, initdb and postgres run in a
user namespace in which root is mapped to `nobody` (see the launcher): the server believes
it is an ordinary user, while its files stay ours on disk, under the results directory
wherever that is (no chown, no other user that must be able to reach it).

Every login asks for a password: the superuser's is the control password, given to initdb
in a file that is removed once it has been read.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

from oltplab.engines.config import ServerPaths
from oltplab.engines.control import PostgresControl
from oltplab.engines.launcher import Layout, PrivateInstance


@dataclass(frozen=True)
class PostgresLayout(Layout):
    @property
    def cnf(self) -> Path:
        return self.work / "postgresql.conf"

    @property
    def error_log(self) -> Path:
        return self.work / "postgres.log"

    @property
    def pid_file(self) -> Path:
        return self.work / "postgres.pid"

    @property
    def socket(self) -> Path:
        """PostgreSQL takes a folder for its socket (it names the file .s.PGSQL.<port>)."""
        return self.socket_folder / f"pg-{self.socket_key}"

    @property
    def password_file(self) -> Path:
        return self.work / "superuser.pw"


class PostgresInstance(PrivateInstance):
    # SIGTERM would wait for every client to leave; SIGINT is PostgreSQL's fast shutdown:
    # clients are disconnected, then a clean checkpoint.
    stop_signal = signal.SIGINT
    layout: PostgresLayout

    def prepare_folders(self) -> None:
        super().prepare_folders()
        self.layout.socket.mkdir(mode=0o700, exist_ok=True)

    def initialise(self, timeout: float) -> None:
        self.machine.write_private(self.layout.password_file, self.control_password + "\n")
        try:
            super().initialise(timeout)
        finally:
            self.machine.remove(self.layout.password_file)

    def _first_start_options(self) -> list[str]:
        return []  # initdb gave the superuser its password; there is no other account

    def _initialise_command(self) -> list[str]:
        install_db = self.distribution.install_db
        assert install_db is not None, "a PostgreSQL distribution has bin/initdb"
        return self.machine.unprivileged(
            [
                str(install_db),
                f"--pgdata={self.layout.datadir}",
                "--username=postgres",
                f"--pwfile={self.layout.password_file}",
                # Over the socket and over TCP alike, every login gives its password.
                "--auth-local=scram-sha-256",
                "--auth-host=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",  # the snapshot is taken after a clean shutdown, which syncs
            ]
        )

    def paths(self, port: int) -> ServerPaths:
        return ServerPaths(
            basedir=self.distribution.basedir,
            datadir=self.layout.datadir,
            socket=self.layout.socket,
            port=port,
            pid_file=self.layout.pid_file,
            error_log=self.layout.error_log,
            tmpdir=self.layout.tmpdir,
            secure_files=self.layout.secure_files,
            lc_messages_dir=None,
        )

    def server_command(self, options: list[str]) -> list[str]:
        return self.machine.unprivileged(
            [
                str(self.distribution.server),
                "-D",
                str(self.layout.datadir),
                "-c",
                f"config_file={self.layout.cnf}",
                *options,
            ]
        )

    def server_output(self) -> Path:
        return self.layout.error_log  # postgres logs to its stderr

    def control(self) -> PostgresControl:  # type: ignore[override]
        return PostgresControl(
            socket_dir=self.layout.socket, port=self.port, password=self.control_password, timeout=5
        )
