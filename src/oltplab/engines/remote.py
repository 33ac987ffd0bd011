"""A private instance on another host, driven over SSH.

The engine's binaries are copied from the local cache to the host's work directory (and
checked by sha256 there), the datadir, snapshot, option file and logs live there too.
The server runs under a small shell wrapper held by a local `ssh`: when that ssh session
ends (oltplab stops it, dies, or the link stays down longer than ssh tolerates) the
wrapper's stdin closes and it stops the server, so nothing is left running on the host.
Control queries go through an SSH forward of the server's unix socket, as root@localhost
with the control password. Each results directory has a work folder of its own there, so
runs from different directories never find each other's servers.
"""

from __future__ import annotations

import contextlib
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from oltplab.engines.control import Control, PostgresControl
from oltplab.engines.hosts import SshHost
from oltplab.engines.launcher import PrivateInstance, free_port
from oltplab.engines.processes import terminate
from oltplab.engines.profiles import ControlRoute, Layout
from oltplab.engines.supplier import Distribution, cache_root
from oltplab.errors import EngineError
from oltplab.network import Shaper, round_trip_ms
from oltplab.spec import NetworkSpec
from oltplab.sysbench import Target

# Kills a server a lost session left behind, only if its command line names our option file.
_KILL_STALE = (
    'pid=$(cat "$1" 2>/dev/null) || exit 0; '
    'tr "\\0" " " < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$2" || exit 0; '
    'kill -9 "$pid"; while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done'
)


def place_on(distribution: Distribution, host: SshHost) -> Distribution:
    """The distribution where the host can run it: where it is, when the host has the very
    same server binary there (a shared system package), or else copied from the cache to
    the host's work directory (once; checked by the server binary's sha256)."""
    there = host.run(["sha256sum", str(distribution.server)], timeout=120)
    if there.returncode == 0 and there.stdout.split()[:1] == [distribution.binary_sha256]:
        return distribution
    root = distribution.basedir
    cache = cache_root()
    if not root.is_relative_to(cache):
        raise EngineError(
            f"engine {distribution.engine}: only engines fetched into oltplab's cache (maven, "
            "debian or tarball sources), or installed at the same place on the host, can run "
            f"on host {host.name}"
        )
    top = cache / root.relative_to(cache).parts[0] / root.relative_to(cache).parts[1]
    remote_top = host.workdir / "engines" / top.name

    def rebased(path: Path | None) -> PurePosixPath | None:
        return None if path is None else remote_top / path.relative_to(top)

    remote = replace(
        distribution,
        basedir=rebased(distribution.basedir),  # type: ignore[arg-type]
        server=rebased(distribution.server),  # type: ignore[arg-type]
        install_db=rebased(distribution.install_db),
        messages_dir=rebased(distribution.messages_dir),
    )
    found = host.run(["sha256sum", str(remote.server)], timeout=120)
    if found.returncode != 0 or found.stdout.split()[:1] != [distribution.binary_sha256]:
        host.push_tree(top, remote_top)
        found = host.run(["sha256sum", str(remote.server)], timeout=120)
        if found.stdout.split()[:1] != [distribution.binary_sha256]:
            raise EngineError(
                f"engine {distribution.engine}: the server binary copied to host {host.name} "
                "does not match its sha256"
            )
    return remote


@dataclass(frozen=True)
class RemoteLayout(Layout):
    """The same files as a local layout, all in the host's work directory (a socket too:
    the cache is on this machine)."""

    @property
    def socket(self) -> Path:
        return self.family.socket_in(self.work)


class RemoteInstance(PrivateInstance):
    machine: SshHost

    def __init__(
        self,
        distribution: Distribution,
        layout: RemoteLayout,
        control_password: str,
        host: SshHost,
        network: NetworkSpec | None = None,
    ) -> None:
        super().__init__(distribution, layout, control_password, host)
        self.host = host.address()
        self.client = host.client_address()
        self._shaper = Shaper(host, network) if network is not None and network.shaped else None
        self._forward: subprocess.Popen[bytes] | None = None
        self._forward_port = 0

    def _sh(self, script: str, *args: str, timeout: float = 600) -> str:
        return self.machine.check(["sh", "-c", script, "sh", *args], timeout=timeout)

    def write_option_file(self, text: str) -> None:
        self.machine.check(["sh", "-c", 'cat > "$1"', "sh", str(self.layout.cnf)], input_text=text)

    def has_snapshot(self) -> bool:
        return self.machine.run(["test", "-d", str(self.layout.snapshot)]).returncode == 0

    def free_port(self) -> int:
        return self.machine.free_ports(1)[0]

    # --- provisioning -------------------------------------------------------------------------

    def prepare_folders(self) -> None:
        private = [str(f) for f in self.family.private_folders(self.layout)]
        self._sh(
            'mkdir -p "$1" "$2" && shift 2 && mkdir -p -m 700 "$@"',
            str(self.layout.work),
            str(self.layout.tmpdir),
            *private,
        )
        self._sh(_KILL_STALE, str(self.layout.pid_file), str(self.layout.cnf))

    def _copy(self, source: PurePosixPath | Path, target: PurePosixPath | Path) -> None:
        self._sh(
            'rm -rf "$2" "$2.partial" && cp -a "$1" "$2.partial" && mv "$2.partial" "$2"',
            str(source),
            str(target),
        )

    def restore(self) -> None:
        self._copy(self.layout.snapshot, self.layout.datadir)

    def restore_bytes(self) -> int:
        return 0  # on the host's own disk: a full one there fails the copy with its message

    def take_snapshot(self) -> None:
        self._copy(self.layout.datadir, self.layout.snapshot)

    def discard_datadir(self) -> None:
        with contextlib.suppress(EngineError):
            self._sh('rm -rf "$1"', str(self.layout.datadir))

    # --- launching ----------------------------------------------------------------------------

    def _log_size(self) -> int:
        done = self.machine.run(["stat", "-c", "%s", str(self.layout.error_log)], timeout=60)
        return int(done.stdout.strip()) if done.returncode == 0 else 0

    def _log_from(self, offset: int, lines: int | None = None) -> str:
        done = self.machine.run(
            ["tail", "-c", f"+{offset + 1}", str(self.layout.error_log)], timeout=60
        )
        text = done.stdout if done.returncode == 0 else ""
        return text if lines is None else " | ".join(text.strip().splitlines()[-lines:])

    def _spawn(self, command: list[str]) -> None:
        self.process = self.machine.spawn_held(command, self.layout.server_output)
        self._forward_port = free_port()
        socket = self.family.socket_file(self.layout.socket, self.port)
        self._forward = self.machine.forward(self._forward_port, PurePosixPath(socket))

    def start(self, port: int, timeout: float) -> None:
        super().start(port, timeout)
        if self._shaper is not None:
            self.client_port = self._shaper.start(self.host, port, self.client)

    @property
    def shaping(self) -> str | None:
        applied = self._shaper.applied if self._shaper else None
        return applied.describe() if applied else None

    def control(self) -> Control | PostgresControl:
        return self.family.control(ControlRoute(port=self._forward_port), self.control_password)

    def local_work(self) -> Path | None:
        return None

    def link(self, target: Target) -> dict[str, Any] | None:
        """The round trip from sysbench's machine to the server, and the shaping applied."""
        rtt = round_trip_ms(
            lambda: (
                Control(
                    host=target.host, port=target.port, user=target.user, password=target.password
                )
                if self.client_protocol == "mysql"
                else PostgresControl(
                    host=target.host, port=target.port, user=target.user, password=target.password
                )
            )
        )
        return {"rtt_ms": round(rtt, 3), "shaping": self.shaping}

    def exit_description(self) -> str:
        if self.process is None or self.process.returncode is None:
            return "engine process running"
        return f"the ssh session holding the engine on host {self.machine.name} ended"

    def stop(self, timeout: float) -> bool:
        """Close the wrapper's stdin: it stops the server and waits for it."""
        if self.process is None:
            return True
        process, self.process = self.process, None
        clean = SshHost.release(process, timeout)
        self._end_forward()
        if self._shaper is not None:
            self._shaper.stop()
        # Whatever happened to the session, no server of ours stays on the host.
        with contextlib.suppress(EngineError):
            self._sh(_KILL_STALE, str(self.layout.pid_file), str(self.layout.cnf), timeout=60)
        return clean

    def kill(self) -> None:
        if self.process is not None:
            with contextlib.suppress(EngineError):
                self._sh(_KILL_STALE, str(self.layout.pid_file), str(self.layout.cnf), timeout=60)
            terminate(self.process, 5)
            self.process = None
        self._end_forward()
        if self._shaper is not None:
            self._shaper.stop()

    def _end_forward(self) -> None:
        if self._forward is not None:
            terminate(self._forward, 5)
            self._forward = None

    def session_log(self) -> str:
        with contextlib.suppress(EngineError):
            return self._log_from(self._log_offset)
        return ""

    def session_log_tail(self, lines: int = 8) -> str:
        with contextlib.suppress(EngineError):
            return self._log_from(self._log_offset, lines)
        return ""
