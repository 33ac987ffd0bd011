"""`[distribute]`: how a matrix is cut into blocks for several machines, and the canary
every machine measures so that their speeds can be compared."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, field_validator

from oltplab.spec.fields import Seconds, StrictModel

# What a block may be cut by. Engines and repetitions never are: every engine-vs-engine
# comparison, and every repetition of a cell, is measured on one machine.
BlockDimension = Literal["placement", "tier", "workload", "threads"]
DEFAULT_BLOCK: list[BlockDimension] = ["placement", "tier", "workload"]
_CANARY = re.compile(
    r"^(?P<engine>\S+)(?: +(?P<tier>\S+))? +(?P<workload>[A-Za-z0-9][A-Za-z0-9._-]*)"
    r" +(?P<threads>\d+)t$"
)


@dataclass(frozen=True)
class ShardCanary:
    """The one short cell every machine measures at the start and the end of its shard."""

    engine: str
    tier: str | None  # None: the spec's first tier
    workload: str
    threads: int


def parse_canary(text: str) -> ShardCanary:
    match = _CANARY.match(text.strip())
    if match is None or int(match["threads"]) < 1:
        raise ValueError(
            f'expects "ENGINE [TIER] WORKLOAD <N>t", e.g. "mysql-8.0.31 oltp_read_only 1t" '
            f"(got {text!r})"
        )
    return ShardCanary(match["engine"], match["tier"], match["workload"], int(match["threads"]))


class DistributeSpec(StrictModel):
    block: Annotated[list[BlockDimension], Field(min_length=0, max_length=4)] = list(DEFAULT_BLOCK)
    canary: str | None = None
    canary_seconds: Seconds = 30
    # A machine whose canary is this much slower than the machines' median is flagged.
    slow_machine_pct: Annotated[float, Field(gt=0, lt=100)] = 10.0

    @field_validator("block")
    @classmethod
    def _distinct(cls, value: list[BlockDimension]) -> list[BlockDimension]:
        if len(set(value)) != len(value):
            raise ValueError("each dimension may be listed once")
        return value

    @field_validator("canary")
    @classmethod
    def _canary(cls, value: str | None) -> str | None:
        if value is not None:
            parse_canary(value)
        return value

    @property
    def parsed_canary(self) -> ShardCanary | None:
        return parse_canary(self.canary) if self.canary else None
