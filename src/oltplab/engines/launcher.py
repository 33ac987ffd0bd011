"""The provisioner and launcher of a private instance: datadir, option file, process.

Each engine gets a work folder in the results directory with its datadir, the snapshot
taken after `sysbench prepare`, its option file, pid file and error log. The socket lives
under the cache folder because unix socket paths are limited to about 100 bytes.

When oltplab runs as root, the server does not: it runs in a user namespace in which
root is mapped to `nobody`. It holds no capability there (it cannot bind low ports, kill
or trace others' processes, or read other users' private files), while its files stay
owned as everything else in the results directory. Its accounts all have passwords and
`secure_file_priv` confines file reads and writes to an empty folder of its own.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from oltplab.engines.config import ServerPaths
from oltplab.engines.control import Control, PostgresControl
from oltplab.engines.hosts import Host, PrivateFile
from oltplab.engines.processes import kill_stale, spawn, terminate
from oltplab.engines.profiles import ControlRoute, Layout
from oltplab.engines.supplier import Distribution
from oltplab.errors import EngineError
from oltplab.store.files import tree_bytes
from oltplab.sysbench import Target


def free_port() -> int:
    """A port nobody listens on now; the kernel picks it, so no fixed port is ever assumed."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def tail(path: Path, lines: int = 8, start: int = 0) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(start)
            text = handle.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def copy_tree(source: Path, target: Path) -> None:
    """A datadir copy; reflinks make it nearly free on filesystems that have them."""
    if target.exists():
        shutil.rmtree(target)
    tmp = target.with_name(target.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    subprocess.run(["cp", "-a", "--reflink=auto", str(source), str(tmp)], check=True)
    tmp.rename(target)


class PrivateInstance:
    """One engine process on its own datadir, port and socket, on this machine: a family
    (what to run) on a host (where). RemoteInstance runs the same on an SSH host."""

    host = "127.0.0.1"

    def __init__(
        self, distribution: Distribution, layout: Layout, control_password: str, machine: Host
    ) -> None:
        self.distribution = distribution
        self.family = layout.family
        self.layout = layout
        self.machine = machine
        self.control_password = control_password
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.client_port = 0  # where sysbench connects: the port, or a shaping proxy's
        self._log_offset = 0
        self._accounts_pending = False

    owned = True  # oltplab starts and stops it (an endpoint is measured as it is)

    @property
    def client_protocol(self) -> str:
        return self.family.client_protocol

    # --- provisioning -------------------------------------------------------------------------

    def prepare_folders(self) -> None:
        self.layout.work.mkdir(parents=True, exist_ok=True)
        self.layout.tmpdir.mkdir(exist_ok=True)
        # Only we may reach the sockets: the control account logs in through them.
        self.layout.socket_folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for folder in self.family.private_folders(self.layout):
            folder.mkdir(mode=0o700, exist_ok=True)
        kill_stale(self.layout.pid_file, str(self.layout.cnf))

    def initialise(self, timeout: float) -> None:
        """A brand-new datadir from the option file already written, where the server runs."""
        make = "" if self.family.makes_its_datadir else ' && mkdir "$1"'
        self.machine.check(["sh", "-c", 'rm -rf "$1"' + make, "sh", str(self.layout.datadir)])
        offset = self._log_size()
        secrets = self.family.initialise_secrets(self.layout, self.control_password)
        try:
            for path, text in secrets.items():
                self.machine.write_private(path, text)
            done = self.machine.run(
                self.family.initialise_command(self.layout, self.machine), timeout=timeout
            )
        finally:
            for path in secrets:
                self.machine.remove(path)
        if done.returncode != 0:
            where = "" if self.machine.is_local else f" on host {self.machine.name}"
            detail = self._log_from(offset, 3) or done.stderr.strip()[-300:]
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
            self.machine.check(["sh", "-c", 'cat >> "$1"', "sh", target], input_text=lines)

    def paths(self, port: int) -> ServerPaths:
        return self.family.paths(self.layout, port, self.host)

    def write_option_file(self, text: str) -> None:
        self.layout.cnf.write_text(text)

    def has_snapshot(self) -> bool:
        return self.layout.snapshot.is_dir()

    def free_port(self) -> int:
        return free_port()

    def restore(self) -> None:
        copy_tree(self.layout.snapshot, self.layout.datadir)

    def restore_bytes(self) -> int:
        """The disk space a restore takes here beyond what the datadir it replaces frees."""
        return max(0, tree_bytes(self.layout.snapshot) - tree_bytes(self.layout.datadir))

    def discard_datadir(self) -> None:
        shutil.rmtree(self.layout.datadir, ignore_errors=True)

    def take_snapshot(self) -> None:
        copy_tree(self.layout.datadir, self.layout.snapshot)

    def local_work(self) -> Path | None:
        """The work folder when it is on this machine (whose disk the run record names)."""
        return self.layout.work

    def link(self, target: Target) -> dict[str, Any] | None:
        """The network between sysbench and the server, measured; None on this machine."""
        return None

    def server_pid(self) -> int | None:
        local = self.machine.is_local and self.process is not None
        return self.process.pid if local and self.process else None

    # --- launching ----------------------------------------------------------------------------

    def _log_size(self) -> int:
        try:
            return self.layout.error_log.stat().st_size
        except OSError:
            return 0

    def _log_from(self, offset: int, lines: int) -> str:
        return " | ".join(tail(self.layout.error_log, lines, offset).splitlines())

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
        self.port = self.client_port = port
        self._log_offset = self._log_size()
        options, secrets = self._first_start()
        try:
            for path, text in secrets.items():
                self.machine.write_private(path, text)
            self._spawn(self.server_command(options))
            self._wait_ready(timeout)
        finally:
            for path in secrets:
                self.machine.remove(path)
        self._accounts_pending = False

    def _spawn(self, command: list[str]) -> None:
        with self.layout.server_output.open("ab") as output:
            self.process = spawn(command, stdout=output)

    def _wait_ready(self, timeout: float) -> None:
        """Until the server answers a control connection; it may also die or hang."""
        assert self.process is not None
        where = "" if self.machine.is_local else f" on host {self.machine.name}"
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise EngineError(
                    f"engine {self.distribution.engine}: server{where} exited with code "
                    f"{self.process.returncode} while starting: {self.session_log_tail(4)}"
                )
            try:
                self.control().close()
                return
            except EngineError:
                if time.monotonic() > deadline:
                    self.kill()
                    raise EngineError(
                        f"engine {self.distribution.engine}: not ready{where} after "
                        f"{timeout:.0f} s: {self.session_log_tail(4)}"
                    ) from None
                time.sleep(0.2)

    def control(self) -> Control | PostgresControl:
        route = ControlRoute(socket=self.layout.socket, port=self.port)
        return self.family.control(route, self.control_password)

    def client_options(self) -> PrivateFile:
        """[client] options, password included, on the machine the server runs on: for
        client tools, whose command lines anyone can list."""
        return PrivateFile(
            self.machine,
            self.layout.client_options,
            f"[client]\nuser=root\npassword={self.control_password}\nsocket={self.layout.socket}\n",
        )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def exit_description(self) -> str:
        if self.process is None or self.process.returncode is None:
            return "engine process running"
        code = self.process.returncode
        if code < 0:
            return f"engine process killed by signal {-code}"
        return f"engine process exited with code {code}"

    def stop(self, timeout: float) -> bool:
        """Clean shutdown; SIGKILL after timeout. True when it shut down cleanly."""
        if self.process is None:
            return True
        clean = terminate(self.process, timeout, self.family.stop_signal)
        self.process = None
        return clean

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def session_log(self) -> str:
        """The error log written since the last start."""
        try:
            with self.layout.error_log.open("rb") as handle:
                handle.seek(self._log_offset)
                return handle.read().decode(errors="replace")
        except OSError:
            return ""

    def session_log_tail(self, lines: int = 8) -> str:
        return self._log_from(self._log_offset, lines)
