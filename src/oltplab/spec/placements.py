"""Where engines and sysbench run: other machines reached over SSH, each engine's
placement, and the link shaping of network scenarios."""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import AfterValidator, BeforeValidator, Field, field_validator

from oltplab.spec.fields import Name, PathText, StrictModel, allowed_ssh_options
from oltplab.spec.sources import beside_spec

LOCAL_HOST: Final = "local"


class HostSpec(StrictModel):
    """Another machine, reached with the user's own OpenSSH client and ~/.ssh/config."""

    name: Name
    ssh: Annotated[str, Field(pattern=r"^[^\s-][^\s]*$")]  # user@host, or a ~/.ssh/config alias
    port: Annotated[int, Field(gt=0, lt=65536)] | None = None
    identity_file: Annotated[PathText, BeforeValidator(beside_spec)] | None = None
    workdir: Annotated[str, Field(pattern=r"^/[^\s]*$")] = "/tmp/oltplab"
    # Extra `ssh -o Key=Value` options, on top of what ~/.ssh/config says.
    options: Annotated[
        dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9]+$")], str],
        AfterValidator(allowed_ssh_options),
    ] = {}

    @field_validator("name")
    @classmethod
    def _not_local(cls, name: str) -> str:
        if name == LOCAL_HOST:
            raise ValueError('"local" is this machine; give the host another name')
        return name


class PlacementSpec(StrictModel):
    """Where the engine runs and where sysbench runs; apart, the scenario is *-network."""

    server: str = LOCAL_HOST
    client: Literal["local"] = LOCAL_HOST

    @property
    def network(self) -> bool:
        return self.server != self.client


class NetworkSpec(StrictModel):
    """Link shaping for what-if studies, on the server side of network placements."""

    delay_ms: Annotated[float, Field(ge=0, le=10_000)] = 0
    rate_mbit: Annotated[float, Field(gt=0)] | None = None
    loss_pct: Annotated[float, Field(ge=0, le=100)] = 0

    @property
    def shaped(self) -> bool:
        return self.delay_ms > 0 or self.rate_mbit is not None or self.loss_pct > 0
