"""An existing server reached by its endpoint: measured as it is, never started or stopped."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from oltplab.base.errors import EngineError, EnvironmentProblem
from oltplab.base.wire import WireProtocol
from oltplab.engines.config import client_section
from oltplab.engines.control import Connection, LoginRefused
from oltplab.engines.families import family_named
from oltplab.engines.family import Family
from oltplab.engines.hosts import Host, PrivateFile
from oltplab.engines.server import vault
from oltplab.spec import EngineSpec
from oltplab.spec.sources import EndpointSource
from oltplab.sysbench.driver import ConnectionTarget

# What the platform running an endpoint says of it (Kubernetes: its pod, node and limits),
# as {engine name: text}, given by whoever started the run; recorded beside its source.
PLATFORM_ENV = "OLTPLAB_ENDPOINT_PLATFORM"


def endpoint_host(engine: EngineSpec) -> str | None:
    """The host name or address an endpoint engine is reached at; None for any other."""
    if not isinstance(engine.source, EndpointSource):
        return None
    return engine.source.endpoint.rsplit(":", 1)[0]


def platform_of(engine: str) -> str | None:
    try:
        said = json.loads(os.environ.get(PLATFORM_ENV, "{}"))
    except ValueError:
        raise EngineError(f"{PLATFORM_ENV}: not JSON ({{engine name: text}} expected)") from None
    found = said.get(engine) if isinstance(said, dict) else None
    return str(found) if found else None


def endpoint_password(engine: str, source: EndpointSource) -> str:
    """The password from an environment variable or a file only its owner can read."""
    if source.password_env:
        value = os.environ.get(source.password_env)
        if value is None:
            raise EngineError(
                f"engine {engine}: environment variable {source.password_env} is not set "
                "(it should hold the endpoint's password)"
            )
        return value
    if source.password_file:
        path = source.password_file.expanduser()
        try:
            mode = path.stat().st_mode
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise EngineError(
                    f"engine {engine}: password file {path} is readable by others; "
                    f"run chmod 600 {path}"
                )
            return path.read_text().strip()
        except OSError as exc:
            raise EngineError(f"engine {engine}: cannot read password file {path}: {exc}") from None
    return ""


def protocol_family(engine: EngineSpec) -> type[Family]:
    """The family whose protocol reaches an endpoint: the one the spec names, else the
    MySQL family's (which of its families the server is, it says once connected)."""
    return family_named(engine.family or "mysql")


class Endpoint:
    """The server side of a session on a server oltplab does not own, reached over its
    family's protocol as the account the spec names, in the benchmark database where the
    family's accounts log in to one (PostgreSQL)."""

    machine = Host()  # client tools run here, never on the endpoint's machine
    owned = False  # measured as it is: never configured, started or stopped

    def __init__(
        self, source: EndpointSource, password: str, work: Path, family: type[Family]
    ) -> None:
        host, port = source.endpoint.rsplit(":", 1)
        self.host, self.port = host, int(port)
        self.user = source.user
        self._password = password
        self._work = work
        self._family = family

    @classmethod
    def of(cls, engine: EngineSpec, work: Path) -> Endpoint:
        assert isinstance(engine.source, EndpointSource)
        password = endpoint_password(engine.name, engine.source)
        return cls(engine.source, password, work, protocol_family(engine))

    @property
    def client_protocol(self) -> WireProtocol:
        return self._family.client_protocol

    @property
    def client_port(self) -> int:
        return self.port

    @property
    def password(self) -> str:
        return self._password

    def control(self, database: str | None = None) -> Connection:
        # As sysbench logs in: MySQL's status is global, PostgreSQL's statistics are read in
        # the benchmark database, the only one its role needs.
        return self._family.client(self.host, self.port, self.user, self._password)

    def client_options(self) -> PrivateFile:
        """[client] options for the MySQL family's client tools, there only while one runs."""
        return PrivateFile(
            self.machine,
            vault(self._work) / "client.cnf",
            client_section(
                {
                    "user": self.user,
                    "password": self._password,
                    "host": self.host,
                    "port": str(self.port),
                }
            ),
        )

    def alive(self) -> bool:
        try:
            self.control().close()
        except EngineError:
            return False
        return True

    def exit_description(self) -> str:
        return "endpoint became unreachable"

    def stop(self, timeout: float) -> bool:
        """Never ours to stop."""
        return True

    def kill(self) -> None:
        """Never ours to kill."""

    def server_pid(self) -> int | None:
        return None

    def restore_bytes(self) -> int:
        return 0

    def discard_datadir(self) -> None:
        """Nothing of an endpoint is ours to discard."""

    def local_work(self) -> Path | None:
        return None

    def link(self, target: ConnectionTarget) -> dict[str, Any] | None:
        return None

    def session_log(self) -> str:
        return ""

    def session_log_tail(self, lines: int = 8) -> str:
        return ""


def check_endpoints(engines: list[EngineSpec]) -> None:
    """Before anything is created: each endpoint answers, its password can be read and the
    server takes it, for an account it confines to the benchmark database where its family
    tells. A server that does not answer is the environment's to fix, not the spec's: no
    results folder full of cells that failed for it."""
    for engine in engines:
        if not isinstance(engine.source, EndpointSource):
            continue
        where = f"engine {engine.name}"
        endpoint = Endpoint.of(engine, Path())  # a password that cannot be read stops here
        try:
            control = endpoint.control()
        except LoginRefused as refused:
            raise EngineError(f"{where}: the endpoint refused the login: {refused}") from None
        except EngineError as unanswered:
            raise EnvironmentProblem(
                f"{where}: endpoint {engine.source.endpoint} cannot be reached ({unanswered}); "
                "start the server, or correct source.endpoint in the spec"
            ) from None
        with control:
            unconfined = control.unconfined()
        if unconfined:
            raise EngineError(
                f"{where}: {unconfined}; benchmark with an account whose rights are on its "
                "own database only"
            )
