"""Where commands run: this machine, or another one reached with the user's OpenSSH client.

A remote host is used as the user's `ssh` sees it (their ~/.ssh/config, agent and known
hosts), in batch mode so a prompt can never hang a run. Long-lived remote processes (the
engine, the collectors) are children of a local `ssh` process: when oltplab stops them, or
dies, the ssh session ends and the remote side ends with it.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import IO

from oltplab.engines.processes import spawn, terminate
from oltplab.errors import EngineError
from oltplab.store.files import write_secret

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
# Servers refuse root or should not have it: as root, they run where root is this user.
NOBODY = 65534


def unprivileged(command: list[str], as_root: bool) -> list[str]:
    """The command run in a user namespace in which root is `nobody`, when we are root."""
    if not as_root:
        return command
    return ["unshare", "--user", f"--map-user={NOBODY}", f"--map-group={NOBODY}", "--", *command]


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
        if self.is_local:
            return shutil.which(tool) is not None
        return self.run(["sh", "-c", 'command -v "$1"', "sh", tool], timeout=60).returncode == 0

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

    def unprivileged(self, command: list[str]) -> list[str]:
        """A server's command, without root's capabilities if we are root here."""
        return unprivileged(command, os.geteuid() == 0)

    def hostname(self) -> str:
        return socket.gethostname()

    def write_private(self, path: Path | PurePosixPath, text: str) -> None:
        """A file only we can read here (it may hold a password)."""
        write_secret(Path(path), text)

    def remove(self, path: Path | PurePosixPath) -> None:
        Path(path).unlink(missing_ok=True)


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


@dataclass(frozen=True)
class SshHost(Host):
    destination: str = ""
    port: int | None = None
    identity_file: Path | None = None
    workdir: PurePosixPath = PurePosixPath("/tmp/oltplab")
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
    def _is_root(self) -> bool:
        return self.check(["id", "-u"], timeout=60).strip() == "0"

    def unprivileged(self, command: list[str]) -> list[str]:
        return unprivileged(command, self._is_root)

    def hostname(self) -> str:
        return self.check(["uname", "-n"], timeout=60).strip()

    def write_private(self, path: Path | PurePosixPath, text: str) -> None:
        self.check(["sh", "-c", 'umask 077 && cat > "$1"', "sh", str(path)], input_text=text)

    def remove(self, path: Path | PurePosixPath) -> None:
        self.check(["rm", "-f", str(path)], timeout=60)

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
