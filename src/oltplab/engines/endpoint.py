"""A server oltplab does not own, measured as it is and never started or stopped: an
existing server reached by its endpoint, or a database an operator deploys on Kubernetes,
reached by the Service its resource names."""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
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
from oltplab.kube.client import connect
from oltplab.kube.operated import Operated, read_operated, secret_value
from oltplab.spec import EngineSpec
from oltplab.spec.sources import EndpointSource, KubernetesSource
from oltplab.sysbench.driver import ConnectionTarget

# What the platform running an endpoint says of it (Kubernetes: its pod, node and limits),
# as {engine name: text}, given by whoever started the run; recorded beside its source.
PLATFORM_ENV = "OLTPLAB_ENDPOINT_PLATFORM"
# The operators' databases as the submitting side read them for the pods, which have no
# access to the API: {engine name: Operated}; each password in its own variable, from
# the resource's Secret.
OPERATED_ENV = "OLTPLAB_OPERATED"


def operated_password_env(engine: str) -> str:
    return "OLTPLAB_PASSWORD_" + re.sub(r"[^A-Z0-9]", "_", engine.upper())


@dataclass(frozen=True)
class Reach:
    """How a server oltplab does not own is reached: its endpoint and account, the password,
    the family whose protocol it speaks, and what its platform says of it."""

    source: EndpointSource
    password: str
    family: type[Family]
    platform: str | None
    unready: str = ""  # an operator's database: why it was not ready when it was read


def reach(engine: EngineSpec) -> Reach:
    """An operator's database from its live resource (or what the submitting side read
    for a pod); an endpoint from the spec."""
    if isinstance(engine.source, KubernetesSource):
        return _operated_reach(engine.name, engine.source)
    assert isinstance(engine.source, EndpointSource)
    password = endpoint_password(engine.name, engine.source)
    return Reach(engine.source, password, protocol_family(engine), platform_of(engine.name))


def _operated_reach(engine: str, source: KubernetesSource) -> Reach:
    resource = source.kubernetes
    where = f"engine {engine}: Kubernetes {resource}"
    given = json.loads(os.environ.get(OPERATED_ENV, "{}"))
    if engine in given:
        found = Operated(**given[engine])
        password = os.environ.get(operated_password_env(engine), "")
    else:
        api = connect()
        found = read_operated(api, resource.kind, resource.namespace, resource.name)
        if found.problem:
            raise EngineError(f"{where} is not ready: {found.problem}")
        password = secret_value(api, resource.namespace, found.secret, found.secret_key)
    if not password and not found.problem:
        raise EngineError(
            f"{where}: no password in key {found.secret_key} of Secret {found.secret}"
        )
    return Reach(
        EndpointSource(endpoint=found.endpoint, user=found.user), password,
        family_named(found.family), found.platform, found.problem,
    )  # fmt: skip


def endpoint_host(engine: EngineSpec) -> str | None:
    """The host name or address an endpoint engine is reached at; None for any other (an
    operator's database says more of itself)."""
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
        reached = reach(engine)
        return cls(reached.source, reached.password, work, reached.family)

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
        # An operator's database is checked where its engine is set up: one that never
        # became ready fails its own cells, with the operator's reason, not the run.
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
