"""The provisioner and launcher of a private instance: datadir, option file, process.

An instance is a family profile (what to run) composed with a host (where): this machine
or an SSH host. It asks its host for every file and process operation, so the same code
runs an engine of any family here or elsewhere.

Each engine gets a work folder (in the results directory here, in the host's work
directory elsewhere) with its datadir, the snapshot taken after `sysbench prepare`, its
option file, pid file and error log. Here, the socket lives under the cache folder because
unix socket paths are limited to about 100 bytes.

When oltplab runs as root, the server does not: it runs as a host uid of its own, which
owns its work and socket folders, in a mount namespace where it sees of root's private
folders only those and its binaries (engines/identity.py). It holds no capability and
shares its uid with nothing: it cannot bind low ports, signal or trace anyone else's
processes, root's included, or read other users' private files. Its accounts all have
passwords and `secure_file_priv` confines file reads and writes to an empty folder of its
own.
"""

from __future__ import annotations

import subprocess
import time
from functools import cached_property
from pathlib import Path
from typing import Any

from oltplab.base.errors import EngineError
from oltplab.base.wire import WireProtocol
from oltplab.engines.config import ServerPaths, client_section
from oltplab.engines.control import Connection
from oltplab.engines.distribution import Distribution, altered_binary
from oltplab.engines.family import ControlRoute, Layout
from oltplab.engines.hosts import Forward, Host, PrivateFile, ServerView
from oltplab.engines.network import Shaper, round_trip_ms
from oltplab.store.files import tree_bytes
from oltplab.sysbench.driver import ConnectionTarget


class PrivateInstance:
    """One engine process on its own datadir, port and socket: a family (what to run) on a
    host (where), with a shaped link to it when the spec asks for one."""

    def __init__(
        self,
        distribution: Distribution,
        layout: Layout,
        control_password: str,
        machine: Host,
        shaper: Shaper | None = None,
    ) -> None:
        self.distribution = distribution
        self.family = layout.family
        self.layout = layout
        self.machine = machine
        self.control_password = control_password
        self.host = machine.address()  # where sysbench connects
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.client_port = 0  # where sysbench connects: the port, or a shaping proxy's
        self._shaper = shaper
        self._forward: Forward | None = None
        self._log_offset = 0
        self._output_offset = 0
        self._accounts_pending = False

    owned = True  # oltplab starts and stops it (an endpoint is measured as it is)

    @property
    def client_protocol(self) -> WireProtocol:
        return self.family.client_protocol

    # --- provisioning -------------------------------------------------------------------------

    @cached_property
    def client(self) -> str:
        """sysbench's machine as the server sees it."""
        return self.machine.client_address()

    def prepare_folders(self) -> None:
        layout = self.layout
        # Only we may reach the sockets: the control account logs in through them.
        private = [
            layout.vault,
            layout.socket_folder,
            layout.socket_home,
            *self.family.private_folders(layout),
        ]
        self.machine.make_folders([layout.work, layout.tmpdir], private)
        self._end_server()
        for secret in layout.secret_files:
            self.machine.remove(secret)

    @property
    def _view(self) -> ServerView:
        return self.family.server_view(self.layout)

    def _hand_over(self) -> None:
        """Everything the server writes, its own (when we are root, it runs as its own uid)."""
        layout = self.layout
        self.machine.hand_over([layout.work, layout.socket_home], self._view)

    def _end_server(self) -> None:
        """No server of ours stays behind, nor anything its uid started."""
        self.machine.kill_stale(self.layout.pid_file, str(self.layout.cnf), self._view)
        self.machine.end_server_processes(self._view)

    def _check_binary(self) -> None:
        """The server binary is the one its engine recorded (the cache's manifest): one
        changed since, in a cache many machines share say, is never run nor measured."""
        host = None if self.machine.is_local else self.machine.name
        found = self.machine.sha256(self.distribution.server)
        if problem := altered_binary(self.distribution, found, host):
            raise EngineError(problem)

    def initialise(self, timeout: float) -> None:
        """A brand-new datadir from the option file already written, where the server runs."""
        self._check_binary()
        make = "" if self.family.makes_its_datadir else ' && mkdir "$1"'
        self.machine.check(["sh", "-c", 'rm -rf "$1"' + make, "sh", str(self.layout.datadir)])
        offset = self._log_size()
        secrets = self.family.initialise_secrets(self.layout, self.control_password)
        try:
            for path, text in secrets.items():
                self.machine.write_private(path, text)
            self._hand_over()
            done = self.machine.run(
                self.family.initialise_command(self.layout, self.machine),
                input_text=self.family.initialise_input(self.layout),
                timeout=timeout,
            )
        finally:
            for path in secrets:
                self.machine.remove(path)
            self.machine.end_server_processes(self._view)
        if done.returncode != 0:
            where = "" if self.machine.is_local else f" on host {self.machine.name}"
            output = done.stderr.strip() or done.stdout.strip()  # old scripts print to stdout
            detail = self._log_from(offset, 3) or output[-300:] or f"exit status {done.returncode}"
            raise EngineError(
                f"engine {self.distribution.engine}: datadir initialisation failed{where}: {detail}"
            )
        self._accounts_pending = True

    def allow_clients(self, clients: tuple[str, ...]) -> None:
        """Let sysbench's machine log in over TCP, where the family keeps such rules in a
        file of the datadir (the snapshot keeps them)."""
        rules = self.family.client_rules(clients)
        if rules is not None:
            name, lines = rules
            target = str(self.layout.datadir / name)
            # As the server's uid, in its datadir: a link there leads nowhere it cannot go.
            append = self.machine.as_server(["sh", "-c", 'cat >> "$1"', "sh", target], self._view)
            self.machine.check(append, input_text=lines)

    def paths(self, port: int) -> ServerPaths:
        return self.family.paths(self.layout, port, self.host)

    def write_option_file(self, text: str) -> None:
        self.machine.write_text(self.layout.cnf, text)

    def has_snapshot(self) -> bool:
        return self.machine.is_dir(self.layout.snapshot)

    def free_port(self) -> int:
        return self.machine.free_port()

    def restore(self) -> None:
        # The copy is the server's uid's to make, and a work folder and snapshot taken from
        # the store are root's until handed over.
        self._hand_over()
        self.machine.copy_tree(self.layout.snapshot, self.layout.datadir, self._view)

    def restore_bytes(self) -> int:
        """The disk space a restore takes on this machine beyond what the datadir it
        replaces frees (on another host, a full disk fails the copy with its message)."""
        if not self.machine.is_local:
            return 0
        return max(0, tree_bytes(self.layout.snapshot) - tree_bytes(self.layout.datadir))

    def discard_datadir(self) -> None:
        self.machine.remove_tree(self.layout.datadir)

    def take_snapshot(self) -> None:
        self.machine.copy_tree(self.layout.datadir, self.layout.snapshot, self._view)

    def local_work(self) -> Path | None:
        """The work folder when it is on this machine (whose disk the run record names)."""
        return self.layout.work if self.machine.is_local else None

    def link(self, target: ConnectionTarget) -> dict[str, Any] | None:
        """The round trip from sysbench's machine to the server and the shaping applied;
        None on this machine."""
        if self.machine.is_local:
            return None

        def connect() -> Connection:
            return self.family.client(target.host, target.port, target.user, target.password)

        applied = self._shaper.applied if self._shaper else None
        shaping = applied.describe() if applied else None
        return {"rtt_ms": round(round_trip_ms(connect), 3), "shaping": shaping}

    def server_pid(self) -> int | None:
        local = self.machine.is_local and self.process is not None
        return self.process.pid if local and self.process else None

    # --- launching ----------------------------------------------------------------------------

    def _log_size(self) -> int:
        return self.machine.file_size(self.layout.error_log)

    def _log_from(self, offset: int, lines: int, path: Path | None = None) -> str:
        text = self.machine.read_from(path or self.layout.error_log, offset)
        return " | ".join(text.strip().splitlines()[-lines:])

    def server_command(self, options: list[str]) -> list[str]:
        return self.family.server_command(self.layout, self.machine, options)

    def _first_start(self) -> tuple[list[str], dict[Path, str]]:
        """After initialisation: options and files that secure the accounts before the
        first connection."""
        if not self._accounts_pending:
            return [], {}
        secrets = self.family.first_start_secrets(self.layout, self.control_password, self.machine)
        return self.family.first_start_options(self.layout), secrets

    def start(self, port: int, timeout: float) -> None:
        self._check_binary()
        self.port = self.client_port = port
        self._log_offset = self._log_size()
        self._output_offset = self.machine.file_size(self.layout.server_output)
        options, secrets = self._first_start()
        try:
            for path, text in secrets.items():
                self.machine.write_private(path, text)
            self._hand_over()
            self.process = self.machine.spawn_server(
                self.server_command(options), self.layout.server_output
            )
            self._forward = self.machine.reach_socket(
                self.family.socket_file(self.layout.socket, port)
            )
            self._wait_ready(timeout)
        finally:
            for path in secrets:
                self.machine.remove(path)
        self._accounts_pending = False
        if self._shaper is not None:
            self.client_port = self._shaper.start(self.host, port, self.client)

    def _wait_ready(self, timeout: float) -> None:
        """Until the server answers a control connection; it may also die or hang."""
        assert self.process is not None
        where = "" if self.machine.is_local else f" on host {self.machine.name}"
        deadline = time.monotonic() + timeout
        while True:
            if (code := self.process.poll()) is not None:
                raise EngineError(
                    f"engine {self.distribution.engine}: server{where} did not start: "
                    f"{self.machine.describe_exit(code)}; {self._start_failure()}"
                )
            try:
                self.control().close()
                return
            except EngineError:
                if time.monotonic() > deadline:
                    self.kill()
                    raise EngineError(
                        f"engine {self.distribution.engine}: not ready{where} after "
                        f"{timeout:.0f} s: {self._start_failure()}"
                    ) from None
                time.sleep(0.2)

    def _start_failure(self) -> str:
        """Why the server is not up, never empty: its error log since this start, else what
        it printed (a server that cannot read its options dies before it opens its log)."""
        return (
            self.session_log_tail(4)
            or self._log_from(self._output_offset, 4, self.layout.server_output)
            or f"nothing in its error log {self.layout.error_log} nor in its output"
        )

    def control(self, database: str | None = None) -> Connection:
        if self._forward is not None:
            route = ControlRoute(port=self._forward.port, database=database)
        else:
            route = ControlRoute(socket=self.layout.socket, port=self.port, database=database)
        return self.family.control(route, self.control_password)

    def client_options(self) -> PrivateFile:
        """[client] options, password included, on the machine the server runs on: for
        client tools, whose command lines anyone can list."""
        return PrivateFile(
            self.machine,
            self.layout.client_options,
            client_section(
                {
                    "user": "root",
                    "password": self.control_password,
                    "socket": str(self.layout.socket),
                }
            ),
        )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def exit_description(self) -> str:
        if self.process is None or self.process.returncode is None:
            return "engine process running"
        return self.machine.describe_exit(self.process.returncode)

    def stop(self, timeout: float) -> bool:
        """Clean shutdown; SIGKILL after timeout. True when it shut down cleanly."""
        if self.process is None:
            return True
        process, self.process = self.process, None
        clean = self.machine.stop_server(process, timeout, self.family.stop_signal)
        self._end_link()
        self._end_server()
        return clean

    def kill(self) -> None:
        if self.process is not None:
            self.machine.kill_server(self.process)
            self.process = None
            self._end_server()
        self._end_link()

    def _end_link(self) -> None:
        if self._forward is not None:
            self._forward.close()
            self._forward = None
        if self._shaper is not None:
            self._shaper.stop()

    def session_log(self) -> str:
        """The error log written since the last start."""
        return self.machine.read_from(self.layout.error_log, self._log_offset)

    def session_log_tail(self, lines: int = 8) -> str:
        return self._log_from(self._log_offset, lines)
