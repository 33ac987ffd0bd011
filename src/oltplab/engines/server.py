"""What the runner knows of an engine: one small protocol every server meets, whatever its
family and wherever it runs, and the engine's state for a run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from oltplab.base.wire import WireProtocol
from oltplab.engines.distribution import Distribution
from oltplab.engines.hosts import Host, PrivateFile
from oltplab.sysbench.driver import ConnectionTarget, connection_options

if TYPE_CHECKING:  # the drivers (psycopg, PyMySQL) load only where a server is reached
    from oltplab.engines.control import Connection

# sysbench's connection options, password included, in an engine's vault while it runs.
SYSBENCH_OPTIONS = "sysbench.cnf"


# In the vault: the accounts' passwords, and what the snapshot holds.
CONTROL_SECRET, BENCH_SECRET = "control-secret", "secret"
SNAPSHOT_MARKER = "snapshot.json"


def vault(work: Path) -> Path:
    """Root's own folder beside an engine's work folder, which the server's uid owns when
    oltplab runs as root: a file there is whatever that uid made it. So what oltplab reads
    back (the accounts' passwords, the snapshot's marker) and the option files that carry a
    password live here, where only we can write."""
    return work.with_name(work.name + ".vault")


class Server(Protocol):
    """A server a session runs against: a private instance oltplab starts (on this machine
    or an SSH host) or an existing endpoint it only connects to."""

    host: str  # where sysbench connects
    machine: Host  # where client tools for the server run

    @property
    def client_port(self) -> int: ...

    @property
    def owned(self) -> bool:
        """Whether oltplab starts, configures and stops it (an endpoint is measured as is)."""
        ...

    @property
    def client_protocol(self) -> WireProtocol:
        """The protocol that reaches it, and so sysbench's driver."""
        ...

    def control(self, database: str | None = None) -> Connection:
        """A superuser connection; to `database` where the engine's statistics are per
        database (PostgreSQL), else the same wherever."""
        ...

    def client_options(self) -> PrivateFile: ...
    def alive(self) -> bool: ...
    def exit_description(self) -> str: ...
    def stop(self, timeout: float) -> bool: ...
    def kill(self) -> None: ...
    def session_log(self) -> str: ...
    def session_log_tail(self, lines: int = 8) -> str: ...
    def server_pid(self) -> int | None:
        """The server's process id when it runs on this machine (its CPU is read from /proc)."""
        ...

    def restore_bytes(self) -> int:
        """Disk space the next session's datadir takes beyond what it frees."""
        ...

    def discard_datadir(self) -> None: ...
    def local_work(self) -> Path | None: ...
    def link(self, target: ConnectionTarget) -> dict[str, Any] | None: ...


@dataclass
class EngineState:
    name: str
    family: str
    version: str
    server: Server
    user: str
    password: str
    server_version: str
    work: Path
    distribution: Distribution | None = None
    artifact_dir: str = ""
    platform: str | None = None  # an endpoint's: what its platform says of it (a pod, ...)

    def target(self) -> ConnectionTarget:
        driver = self.server.client_protocol.sysbench_driver
        return ConnectionTarget(
            self.server.host, self.server.client_port, self.user, self.password, driver=driver
        )

    def sysbench_options(self) -> PrivateFile:
        """sysbench's connection options, password included, for its --config-file: there
        while sysbench runs only (the port changes from session to session)."""
        return PrivateFile(
            Host(), vault(self.work) / SYSBENCH_OPTIONS, connection_options(self.target())
        )
