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

import hashlib
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from oltplab.engines.config import ServerPaths, parse_version
from oltplab.engines.control import Control, accounts_sql
from oltplab.engines.supplier import Distribution, cache_root
from oltplab.errors import EngineError
from oltplab.hosts import Host, PrivateFile
from oltplab.processes import kill_stale, spawn, terminate
from oltplab.store.files import tree_bytes


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


@dataclass(frozen=True)
class Layout:
    work: Path

    @property
    def datadir(self) -> Path:
        return self.work / "datadir"

    @property
    def snapshot(self) -> Path:
        return self.work / "snapshot"

    @property
    def cnf(self) -> Path:
        return self.work / "my.cnf"

    @property
    def error_log(self) -> Path:
        return self.work / "mysqld.err"

    @property
    def pid_file(self) -> Path:
        return self.work / "mysqld.pid"

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
    def client_options(self) -> Path:
        """[client] options for the tools run against the instance (pt-mysql-summary)."""
        return self.work / "client.cnf"

    @property
    def socket(self) -> Path:
        return self.socket_folder / f"{self.socket_key}.sock"

    @property
    def socket_folder(self) -> Path:
        """Sockets live in the cache, not the work folder: a socket path may not exceed 107
        bytes, which a results directory deep in a tree easily does."""
        return cache_root() / "sock"

    @property
    def socket_key(self) -> str:
        return hashlib.sha256(str(self.work.resolve()).encode()).hexdigest()[:16]

    def paths(self, distribution: Distribution, port: int) -> ServerPaths:
        return ServerPaths(
            basedir=distribution.basedir,
            datadir=self.datadir,
            socket=self.socket,
            port=port,
            pid_file=self.pid_file,
            error_log=self.error_log,
            tmpdir=self.tmpdir,
            secure_files=self.secure_files,
            lc_messages_dir=distribution.messages_dir,
        )


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
    """One engine process on its own datadir, port and socket."""

    host = "127.0.0.1"
    stop_signal = signal.SIGTERM  # a clean shutdown

    def __init__(
        self, distribution: Distribution, layout: Layout, control_password: str, machine: Host
    ) -> None:
        self.distribution = distribution
        self.layout = layout
        self.machine = machine
        self.control_password = control_password
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.client_port = 0  # where sysbench connects: the port, or a shaping proxy's
        self._log_offset = 0
        self._accounts_pending = False

    # --- provisioning -------------------------------------------------------------------------

    def prepare_folders(self) -> None:
        self.layout.work.mkdir(parents=True, exist_ok=True)
        self.layout.tmpdir.mkdir(exist_ok=True)
        self.layout.secure_files.mkdir(mode=0o700, exist_ok=True)
        # Only we may reach the sockets: the control account logs in through them.
        self.layout.socket.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        kill_stale(self.layout.pid_file, str(self.layout.cnf))

    def initialise(self, timeout: float) -> None:
        """A brand-new datadir from the option file already written, where the server runs."""
        # mariadb-install-db makes the datadir itself; the others want it there, empty.
        make = "" if self.distribution.family == "mariadb" else ' && mkdir "$1"'
        self.machine.check(["sh", "-c", 'rm -rf "$1"' + make, "sh", str(self.layout.datadir)])
        offset = self._log_size()
        done = self.machine.run(self._initialise_command(), timeout=timeout)
        if done.returncode != 0:
            where = "" if self.machine.is_local else f" on host {self.machine.name}"
            detail = self._log_from(offset, 3) or done.stderr.strip()[-300:]
            raise EngineError(
                f"engine {self.distribution.engine}: datadir initialisation failed{where}: {detail}"
            )
        self._accounts_pending = True

    def _initialise_command(self) -> list[str]:
        """mariadb-install-db makes the datadir itself; mysqld --initialize wants it empty.
        Both leave root without a password; the first start gives it one (accounts_sql)."""
        dist = self.distribution
        cnf = f"--defaults-file={self.layout.cnf}"
        if dist.family != "mariadb":
            return self.machine.unprivileged([str(dist.server), cnf, "--initialize-insecure"])
        if dist.install_db is None:
            raise EngineError(f"engine {dist.engine}: no mariadb-install-db script found")
        return self.machine.unprivileged(
            [
                str(dist.install_db),
                cnf,
                f"--basedir={dist.basedir}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ]
        )

    def paths(self, port: int) -> ServerPaths:
        return self.layout.paths(self.distribution, port)

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

    # --- launching ----------------------------------------------------------------------------

    def _log_size(self) -> int:
        try:
            return self.layout.error_log.stat().st_size
        except OSError:
            return 0

    def _log_from(self, offset: int, lines: int) -> str:
        return " | ".join(tail(self.layout.error_log, lines, offset).splitlines())

    def server_command(self, options: list[str]) -> list[str]:
        return self.machine.unprivileged(
            [str(self.distribution.server), f"--defaults-file={self.layout.cnf}", *options]
        )

    def server_output(self) -> Path:
        """Where the server's stdout and stderr go (its error log is a file of its own)."""
        return self.layout.work / "mysqld.out"

    def _first_start_options(self) -> list[str]:
        """After initialisation: secure the accounts before the first connection."""
        if not self._accounts_pending:
            return []
        dist = self.distribution
        sql = accounts_sql(
            dist.family, parse_version(dist.version), self.control_password, self.machine.hostname()
        )
        self.machine.write_private(self.layout.accounts_file, sql)
        return [f"--init-file={self.layout.accounts_file}"]

    def start(self, port: int, timeout: float) -> None:
        self.port = self.client_port = port
        self._log_offset = self._log_size()
        options = self._first_start_options()
        try:
            self._spawn(self.server_command(options))
            self._wait_ready(timeout)
        finally:
            if options:
                self.machine.remove(self.layout.accounts_file)
        self._accounts_pending = False

    def _spawn(self, command: list[str]) -> None:
        with self.server_output().open("ab") as output:
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

    def control(self) -> Control:
        return Control(socket=self.layout.socket, password=self.control_password, timeout=5)

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
        clean = terminate(self.process, timeout, self.stop_signal)
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
