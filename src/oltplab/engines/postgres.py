"""A private PostgreSQL instance: initdb, postgres on its own port and socket directory.

PostgreSQL refuses to run as root. When oltplab runs as root, initdb and postgres run in a
user namespace in which root is mapped to `nobody`: the server believes it is an ordinary
user, while its files stay ours on disk, under the results directory wherever that is
(no chown, no other user that must be able to reach it).
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path

from oltplab.engines.config import ServerPaths
from oltplab.engines.control import PostgresControl
from oltplab.engines.launcher import Layout, PrivateInstance

NOBODY = 65534


def unprivileged(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["unshare", "--user", f"--map-user={NOBODY}", f"--map-group={NOBODY}", "--", *command]


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


class PostgresInstance(PrivateInstance):
    # SIGTERM would wait for every client to leave; SIGINT is PostgreSQL's fast shutdown:
    # clients are disconnected, then a clean checkpoint.
    stop_signal = signal.SIGINT

    def prepare_folders(self) -> None:
        super().prepare_folders()
        self.layout.socket.mkdir(mode=0o700, exist_ok=True)

    def _initialise_command(self) -> list[str]:
        install_db = self.distribution.install_db
        assert install_db is not None, "a PostgreSQL distribution has bin/initdb"
        return unprivileged(
            [
                str(install_db),
                f"--pgdata={self.layout.datadir}",
                "--username=postgres",
                # The superuser logs in over the socket only; sysbench over TCP, by password.
                "--auth-local=trust",
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
            lc_messages_dir=None,
            run_as=None,
        )

    def server_command(self) -> list[str]:
        return unprivileged(
            [
                str(self.distribution.server),
                "-D",
                str(self.layout.datadir),
                "-c",
                f"config_file={self.layout.cnf}",
            ]
        )

    def server_output(self) -> Path:
        return self.layout.error_log  # postgres logs to its stderr

    def control(self) -> PostgresControl:  # type: ignore[override]
        return PostgresControl(socket_dir=self.layout.socket, port=self.port, timeout=5)
