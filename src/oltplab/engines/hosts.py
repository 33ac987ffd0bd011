"""Where commands run: this machine, or another one reached with the user's OpenSSH client.

A host offers what an instance needs wherever it runs: its folders and files, a free
port, a server process started, stopped or killed, and a way to reach the server's unix
socket. An instance is the same code on either; only the host differs.

A remote host is used as the user's `ssh` sees it (their ~/.ssh/config, agent and known
hosts), in batch mode so a prompt can never hang a run. Long-lived remote processes (the
engine, the collectors) are children of a local `ssh` process: when oltplab stops them, or
dies, the ssh session ends and the remote side ends with it. Control queries reach a
remote server through an SSH forward of its unix socket.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import IO

from oltplab.base import nofollow
from oltplab.base.errors import EngineError
from oltplab.base.processes import kill_stale, spawn, terminate
from oltplab.engines import identity
from oltplab.engines.distribution import current_sha256
from oltplab.store.files import write_secret

Place = Path | PurePosixPath
log = logging.getLogger("oltplab")

LOCAL = "local"
# Runs a command so that it ends when its ssh session does: the session's stdin closing
# (oltplab stopped it, died, or the link stayed down) stops the command. A background list
# reads /dev/null unless told otherwise, hence fd 3.
HELD = (
    'exec 3<&0; out=$1; shift; "$@" </dev/null >>"$out" 2>&1 & held=$!; '
    '{ cat <&3 >/dev/null 2>&1; kill "$held" 2>/dev/null; } & wait "$held"'
)
_FREE_PORTS = (
    "import socket, sys\n"
    "held = [socket.socket() for _ in range(int(sys.argv[1]))]\n"
    "for s in held: s.bind(('', 0))\n"
    "print(' '.join(str(s.getsockname()[1]) for s in held))\n"
)
# Without an answer for this long, ssh gives the connection up (and the remote side ends).
ALIVE_INTERVAL, ALIVE_COUNT = 2, 3
# Kills a server a lost session left behind, only if its command line names our option file
# and it runs as the server's uid ($3; ours when empty).
_KILL_STALE = (
    '[ -h "$1" ] && exit 0; pid=$(cat "$1" 2>/dev/null) || exit 0; '
    "uid=$(awk '/^Uid:/ { print $2 }' \"/proc/$pid/status\" 2>/dev/null); "
    '[ "$uid" = "${3:-$(id -u)}" ] || exit 0; '
    'tr "\\0" " " < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$2" || exit 0; '
    'kill -9 "$pid"; while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done'
)
# A datadir copy, made by the server's uid: what it owns it copies as itself, so a link it
# planted can lead the copy nowhere it could not go anyway. $3: cp's extra options.
_COPY_TREE = 'rm -rf "$2" "$2.partial" && cp -a $3 "$1" "$2.partial" && mv "$2.partial" "$2"'
# base/nofollow.py on a host where oltplab is not installed: its functions, then a call.
_NOFOLLOW = Path(nofollow.__file__).read_text()
_REMOTE_READ = (
    "import sys\npath, offset = PurePath(sys.argv[1]), int(sys.argv[2])\n"
    "sys.stdout.buffer.write(read_bytes(path, offset) if offset >= 0 else b'%d' % size(path))\n"
)
_REMOTE_HAND_OVER = (
    "import sys\nfor folder in sys.argv[2:]:\n"
    "    for kept in hand_over(PurePath(folder), int(sys.argv[1])):\n        print(kept)\n"
)
_REMOTE_WRITE = (
    "import sys\nwrite_bytes(PurePath(sys.argv[1]), sys.stdin.buffer.read(), int(sys.argv[2], 8))\n"
)


def free_port() -> int:
    """A port nobody listens on now; the kernel picks it, so no fixed port is ever assumed."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Forward:
    """A local TCP port that reaches a unix socket on another host, while it is open."""

    port: int
    process: subprocess.Popen[bytes]

    def close(self) -> None:
        terminate(self.process, 5)


@dataclass(frozen=True)
class ServerView:
    """Who a server runs as when we are root, and the folders it may reach: its own work
    and socket folders, and its binaries (engines/identity.py)."""

    uid: int
    folders: tuple[Path | PurePosixPath, ...]

    def argument(self) -> str:
        return json.dumps({"uid": self.uid, "folders": [str(f) for f in self.folders]})


@dataclass(frozen=True)
class Host:
    """A machine commands run on. The local one runs them as they are."""

    name: str = LOCAL

    @property
    def is_local(self) -> bool:
        return True

    def command(self, args: list[str]) -> list[str]:
        return args

    def run(
        self, args: list[str], *, input_text: str | None = None, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                self.command(args),
                input=input_text,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise EngineError(
                f"host {self.name}: `{shlex.join(args)[:120]}` did not finish within "
                f"{timeout:.0f} s"
            ) from None

    def has(self, tool: str) -> bool:
        return shutil.which(tool) is not None

    def check(self, args: list[str], *, input_text: str | None = None, timeout: float = 300) -> str:
        done = self.run(args, input_text=input_text, timeout=timeout)
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()
            raise EngineError(
                f"host {self.name}: `{shlex.join(args)[:120]}` failed "
                f"(exit {done.returncode}): {said[-1][:300] if said else 'no output'}"
            )
        return done.stdout

    def spawn(
        self,
        args: list[str],
        stdout: IO[bytes] | int | None = subprocess.DEVNULL,
        *,
        stdin_pipe: bool = False,
    ) -> subprocess.Popen[bytes]:
        return spawn(self.command(args), stdout=stdout, stdin_pipe=stdin_pipe)

    @property
    def is_root(self) -> bool:
        return os.geteuid() == 0

    def identity_script(self, args: list[str]) -> list[str]:
        """engines/identity.py run here with args."""
        return [sys.executable, identity.__file__, *args]

    def as_server(self, command: list[str], view: ServerView) -> list[str]:
        """A server's command: as root, run as the server's own uid in its own view."""
        if not self.is_root:
            return command
        return self.identity_script([view.argument(), *command])

    def end_server_processes(self, view: ServerView) -> None:
        """Every process the server's uid runs, ended, a detached one too: each could plant
        links in the server's folders between sessions. Its uid is its alone (when we are
        root; else the server runs as us, and the pid file's process is all we end)."""
        if self.is_root:
            self.check(self.identity_script([identity.END, str(view.uid)]), timeout=120)

    def hand_over(self, folders: Sequence[Place], view: ServerView) -> None:
        """The server's folders, owned by its uid when we are root (else they are ours),
        but for a file with another name, which may be anyone's (base/nofollow.py)."""
        if self.is_root:
            for folder in folders:
                _kept_as_it_was(self, nofollow.hand_over(folder, view.uid))

    def hostname(self) -> str:
        return socket.gethostname()

    def write_private(self, path: Path | PurePosixPath, text: str) -> None:
        """A file only we can read here (it may hold a password)."""
        write_secret(Path(path), text)

    def remove(self, path: Path | PurePosixPath) -> None:
        Path(path).unlink(missing_ok=True)

    # --- an instance's files and server, wherever it runs -----------------------------------

    def address(self) -> str:
        """Where sysbench reaches a server on this host."""
        return "127.0.0.1"

    def client_address(self) -> str:
        """This machine as a server on the host sees it."""
        return "127.0.0.1"

    def make_folders(self, folders: Sequence[Place], private: Sequence[Place]) -> None:
        """Folders, and folders only we may enter (mode 0700)."""
        for folder in folders:
            Path(folder).mkdir(parents=True, exist_ok=True)
        for folder in private:
            Path(folder).mkdir(mode=0o700, parents=True, exist_ok=True)

    def write_text(self, path: Place, text: str) -> None:
        """A file the server reads, in its folder: a link standing there is replaced."""
        nofollow.write_text(path, text)

    def is_dir(self, path: Place) -> bool:
        return Path(path).is_dir()

    def copy_tree(self, source: Place, target: Place, view: ServerView) -> None:
        # Reflinks make it nearly free on filesystems that have them.
        self.check(
            self.as_server(
                ["sh", "-c", _COPY_TREE, "sh", str(source), str(target), "--reflink=auto"], view
            ),
            timeout=3600,
        )

    def remove_tree(self, path: Place) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def file_size(self, path: Place) -> int:
        return nofollow.size(path)

    def sha256(self, path: Place) -> str | None:
        """The file's sha256 as it is now; None when it cannot be read."""
        return current_sha256(Path(path))

    def read_from(self, path: Place, offset: int) -> str:
        """A file's text from a byte offset on; "" when it cannot be read, or a link or
        anything but a regular file stands there (the server's uid may have planted it)."""
        try:
            return nofollow.read_bytes(path, offset).decode(errors="replace")
        except nofollow.Refused as refused:
            log.warning("%s: not read (%s)", path, refused.strerror)
        except OSError:
            pass
        return ""

    def free_port(self) -> int:
        return free_port()

    def kill_stale(self, pid_file: Place, marker: str, view: ServerView) -> None:
        """Kill the process pid_file names if its command line still holds marker (our own
        option file) and it runs as the server's uid, so a pid another process reuses, or
        one the server wrote there, is never killed."""
        kill_stale(Path(pid_file), marker, view.uid if self.is_root else os.geteuid())

    def spawn_server(self, command: list[str], output: Place) -> subprocess.Popen[bytes]:
        """A server process; what it prints is appended to output."""
        with os.fdopen(nofollow.create(output, append=True), "ab") as sink:
            return spawn(command, stdout=sink)

    def stop_server(
        self, process: subprocess.Popen[bytes], timeout: float, stop_signal: int
    ) -> bool:
        """A clean shutdown, SIGKILL after timeout; True when it shut down cleanly."""
        return terminate(process, timeout, stop_signal)

    def kill_server(self, process: subprocess.Popen[bytes]) -> None:
        process.kill()
        process.wait()

    def describe_exit(self, code: int) -> str:
        if code < 0:
            return f"engine process killed by signal {-code}"
        return f"engine process exited with code {code}"

    def reach_socket(self, socket_path: Place) -> Forward | None:
        """How this machine reaches the server's unix socket: directly (None), here."""
        return None


def _kept_as_it_was(host: Host, kept: Sequence[str]) -> None:
    for path in kept:
        log.warning(
            "host %s: %s not handed to the server's uid: it has another name (a hard link), "
            "which may be anyone's file",
            host.name,
            path,
        )


@dataclass(frozen=True)
class PrivateFile:
    """A file holding a secret (options with a password) that exists only while the tool
    reading it runs: written readable by us alone, removed when the tool is done."""

    machine: Host
    path: Path | PurePosixPath
    text: str

    @contextlib.contextmanager
    def present(self) -> Iterator[Path | PurePosixPath]:
        self.machine.write_private(self.path, self.text)
        try:
            yield self.path
        finally:
            self.machine.remove(self.path)


REMOTE_WORKDIR = PurePosixPath("/tmp/oltplab")


@dataclass(frozen=True)
class SshHost(Host):
    destination: str = ""
    port: int | None = None
    identity_file: Path | None = None
    workdir: PurePosixPath = REMOTE_WORKDIR
    options: tuple[tuple[str, str], ...] = ()

    @property
    def is_local(self) -> bool:
        return False

    def ssh_options(self) -> list[str]:
        options = [
            "-o", "BatchMode=yes",
            "-o", f"ServerAliveInterval={ALIVE_INTERVAL}",
            "-o", f"ServerAliveCountMax={ALIVE_COUNT}",
            "-o", "ConnectTimeout=10",
        ]  # fmt: skip
        if self.port:
            options += ["-p", str(self.port)]
        if self.identity_file:
            options += ["-i", str(self.identity_file), "-o", "IdentitiesOnly=yes"]
        for key, value in self.options:
            options += ["-o", f"{key}={value}"]
        return options

    def command(self, args: list[str]) -> list[str]:
        return ["ssh", *self.ssh_options(), self.destination, "--", shlex.join(args)]

    @cached_property
    def is_root(self) -> bool:
        return self.check(["id", "-u"], timeout=60).strip() == "0"

    def identity_script(self, args: list[str]) -> list[str]:
        # The script itself goes along: oltplab is not installed on the host.
        return ["python3", "-c", Path(identity.__file__).read_text(), *args]

    def hand_over(self, folders: Sequence[Place], view: ServerView) -> None:
        # base/nofollow.py's hand_over, run there: `chown -R` would follow hard links.
        if self.is_root:
            said = self.check(
                ["python3", "-c", _NOFOLLOW + _REMOTE_HAND_OVER, str(view.uid), *map(str, folders)],
                timeout=600,
            )
            _kept_as_it_was(self, said.splitlines())

    def hostname(self) -> str:
        return self.check(["uname", "-n"], timeout=60).strip()

    def _write(self, path: Place, text: str, mode: str) -> None:
        """base/nofollow.py's write of path, run on the host."""
        command = ["python3", "-c", _NOFOLLOW + _REMOTE_WRITE, str(path), mode]
        self.check(command, input_text=text)

    def write_private(self, path: Path | PurePosixPath, text: str) -> None:
        self._write(path, text, "600")

    def remove(self, path: Path | PurePosixPath) -> None:
        self.check(["rm", "-f", str(path)], timeout=60)

    def has(self, tool: str) -> bool:
        return self.run(["sh", "-c", 'command -v "$1"', "sh", tool], timeout=60).returncode == 0

    def _sh(self, script: str, *args: str, timeout: float = 600) -> str:
        return self.check(["sh", "-c", script, "sh", *args], timeout=timeout)

    def make_folders(self, folders: Sequence[Place], private: Sequence[Place]) -> None:
        self._sh(
            'n=$1; shift; for f; do if [ "$n" -gt 0 ]; then mkdir -p "$f" || exit 1; '
            'else mkdir -p -m 700 "$f" || exit 1; fi; n=$((n - 1)); done',
            str(len(folders)),
            *(str(f) for f in folders),
            *(str(f) for f in private),
        )

    def write_text(self, path: Place, text: str) -> None:
        self._write(path, text, "644")

    def is_dir(self, path: Place) -> bool:
        return self.run(["test", "-d", str(path)]).returncode == 0

    def copy_tree(self, source: Place, target: Place, view: ServerView) -> None:
        command = ["sh", "-c", _COPY_TREE, "sh", str(source), str(target), ""]
        self.check(self.as_server(command, view), timeout=3600)

    def remove_tree(self, path: Place) -> None:
        with contextlib.suppress(EngineError):
            self._sh('rm -rf "$1"', str(path))

    def _read(self, path: Place, offset: int) -> str:
        """base/nofollow.py's read (offset >= 0) or size (-1) of path, run on the host."""
        with contextlib.suppress(EngineError):
            command = ["python3", "-c", _NOFOLLOW + _REMOTE_READ, str(path), str(offset)]
            done = self.run(command, timeout=60)
            if done.returncode == 0:
                return done.stdout
        return ""

    def file_size(self, path: Place) -> int:
        said = self._read(path, -1)
        return int(said) if said.isdigit() else 0

    def sha256(self, path: Place) -> str | None:
        done = self.run(["sha256sum", str(path)], timeout=120)
        said = done.stdout.split()[:1]
        return said[0] if done.returncode == 0 and said else None

    def read_from(self, path: Place, offset: int) -> str:
        return self._read(path, offset)

    def free_port(self) -> int:
        return self.free_ports(1)[0]

    def kill_stale(self, pid_file: Place, marker: str, view: ServerView) -> None:
        uid = str(view.uid) if self.is_root else ""
        with contextlib.suppress(EngineError):
            self._sh(_KILL_STALE, str(pid_file), marker, uid, timeout=60)

    def spawn_server(self, command: list[str], output: Place) -> subprocess.Popen[bytes]:
        return self.spawn_held(command, output)

    def stop_server(
        self, process: subprocess.Popen[bytes], timeout: float, stop_signal: int
    ) -> bool:
        """Close the held command's stdin: the wrapper stops the server and waits for it."""
        return self.release(process, timeout)

    def kill_server(self, process: subprocess.Popen[bytes]) -> None:
        terminate(process, 5)

    def describe_exit(self, code: int) -> str:
        return f"the ssh session holding the engine on host {self.name} ended"

    def reach_socket(self, socket_path: Place) -> Forward | None:
        port = free_port()
        return Forward(port, self.forward(port, PurePosixPath(socket_path)))

    def spawn_held(
        self, args: list[str], output: PurePosixPath | Path | str = "/dev/null"
    ) -> subprocess.Popen[bytes]:
        """A long-lived remote command that ends with its ssh session (see HELD); what it
        prints is appended to `output` on the host."""
        return self.spawn(["sh", "-c", HELD, "sh", str(output), *args], stdin_pipe=True)

    @staticmethod
    def release(process: subprocess.Popen[bytes], timeout: float) -> bool:
        """End a held command: close its stdin and wait; True when it ended in time."""
        if process.stdin:
            with contextlib.suppress(OSError):
                process.stdin.close()
        try:
            process.wait(timeout)
            ended = process.returncode == 0
        except subprocess.TimeoutExpired:
            ended = False
        terminate(process, 5)
        return ended

    def free_ports(self, count: int) -> list[int]:
        """Ports nobody listens on, as the host's kernel picks them (needs python3 there)."""
        try:
            said = self.check(["python3", "-c", _FREE_PORTS, str(count)], timeout=60)
            return [int(port) for port in said.split()]
        except (EngineError, ValueError):
            raise EngineError(
                f"host {self.name}: cannot pick a free port there (needs python3)"
            ) from None

    def address(self) -> str:
        """The host name or address ssh connects to (after ~/.ssh/config), for sysbench."""
        done = subprocess.run(
            ["ssh", "-G", *self.ssh_options(), self.destination],
            capture_output=True,
            text=True,
            check=False,
        )
        for line in done.stdout.splitlines():
            key, _, value = line.partition(" ")
            if key == "hostname":
                return value.strip()
        return self.destination.rsplit("@", 1)[-1]

    def client_address(self) -> str:
        """This machine's address as the remote host sees it (for the benchmark user)."""
        said = self.check(["sh", "-c", 'echo "$SSH_CONNECTION"'], timeout=30).split()
        if not said:
            raise EngineError(f"host {self.name}: ssh did not tell the client's address")
        return said[0]

    def forward(self, local_port: int, remote_socket: PurePosixPath) -> subprocess.Popen[bytes]:
        """A local TCP port that reaches a unix socket on the host (for control queries)."""
        return spawn(
            [
                "ssh",
                *self.ssh_options(),
                "-N",
                "-o",
                "ExitOnForwardFailure=yes",
                "-L",
                f"127.0.0.1:{local_port}:{remote_socket}",
                self.destination,
            ]
        )

    def push_tree(self, local: Path, remote: PurePosixPath, timeout: float = 900) -> None:
        """Copy a directory's content to the host (tar over ssh)."""
        tar = subprocess.Popen(["tar", "-C", str(local), "-cf", "-", "."], stdout=subprocess.PIPE)
        try:
            unpack = subprocess.run(
                self.command(["sh", "-c", f"mkdir -p {shlex.quote(str(remote))} && "
                              f"tar -C {shlex.quote(str(remote))} -xf -"]),
                stdin=tar.stdout,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )  # fmt: skip
        finally:
            if tar.stdout:
                tar.stdout.close()
            tar.wait()
        if unpack.returncode != 0 or tar.returncode != 0:
            said = unpack.stderr.strip()[-300:]
            raise EngineError(f"host {self.name}: copying {local} to {remote} failed: {said}")
