"""A matrix cut into blocks, and blocks dealt to shards.

A block is every engine, every repetition (and by default every thread count) of one
(placement, tier, workload): what one machine measures, interleaved as a single machine
would, so that engine-vs-engine and version-vs-version comparisons never cross machines.
Blocks go to shards longest first, each to the shard with the least work so far (the
LPT rule): deterministic for a spec and a shard count, and within 4/3 of the best
possible longest shard.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from oltplab.base.errors import OltplabError
from oltplab.plan import Cell, Session, build_plan, sessions_seconds
from oltplab.spec import Spec

BlockKey = tuple[tuple[str, str], ...]  # (dimension, value), in the spec's block order
# An assumption, said wherever it counts: sysbench prepare loads about this many rows a
# second. Each shard prepares each of its engines once, unless a shared snapshot exists.
PREPARE_ROWS_PER_SECOND = 100_000
# Setting an engine up before its dataset: initialising a datadir and a first start (MySQL
# 8.0 takes 10-20 s here, MariaDB a few).
ENGINE_SETUP_S = 15.0


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
        if match is None:
            raise OltplabError(f"--shard {text}: expected K/N, e.g. 2/8 (shard 2 of 8)")
        index, count = int(match[1]), int(match[2])
        if not 1 <= index <= count:
            raise OltplabError(f"--shard {text}: K must be between 1 and N ({count})")
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def folder(self) -> str:
        """The shard's results folder name under a distributed run's directory."""
        return f"shard-{self.index:0{len(str(self.count))}d}"


@dataclass(frozen=True)
class Block:
    key: BlockKey
    sessions: tuple[Session, ...]  # the plan's sessions, cut to this block's cells
    seconds: float  # warm-ups and measurements

    @property
    def label(self) -> str:
        """`local/2G/oltp_read_only/64t`: the block's values, in its dimensions' order."""
        shown = [f"{v}t" if d == "threads" else v for d, v in self.key]
        return "/".join(shown) or "everything"

    @property
    def cells(self) -> list[Cell]:
        return [cell for session in self.sessions for cell in session.cells]


def _key(spec: Spec, session: Session, cell: Cell) -> BlockKey:
    values = {
        "placement": session.host,
        "tier": cell.tier,
        "workload": cell.workload,
        "threads": str(cell.threads),
    }
    return tuple((dimension, values[dimension]) for dimension in spec.distribute.block)


def blocks(spec: Spec) -> list[Block]:
    """The spec's blocks, in the order their first cells are planned."""
    found: dict[BlockKey, list[Session]] = {}
    for session in build_plan(spec):
        parts: dict[BlockKey, list[Cell]] = {}
        for cell in session.cells:
            parts.setdefault(_key(spec, session, cell), []).append(cell)
        for key, cells in parts.items():
            found.setdefault(key, []).append(replace(session, cells=tuple(cells)))
    return [
        Block(
            key,
            tuple(sessions),
            sessions_seconds(spec, sessions, wall=True),
        )
        for key, sessions in found.items()
    ]


def assign(found: list[Block], count: int) -> list[list[Block]]:
    """Blocks per shard: longest first, each to the shard with the least so far."""
    shards: list[list[Block]] = [[] for _ in range(count)]
    totals = [0.0] * count
    for block in sorted(found, key=lambda b: (-b.seconds, b.key)):
        target = min(range(count), key=lambda i: (totals[i], i))
        shards[target].append(block)
        totals[target] += block.seconds
    return shards


def shard_sessions(spec: Spec, shard: Shard) -> list[Session]:
    """The sessions shard K of N runs: the plan's own order, cut to its blocks' cells."""
    found = blocks(spec)
    if shard.count > len(found):
        raise OltplabError(
            f"--shard {shard}: the spec has {len(found)} block(s), fewer than {shard.count} "
            "shards; add a dimension to [distribute] block (e.g. threads) or use fewer shards"
        )
    mine = {cell for block in assign(found, shard.count)[shard.index - 1] for cell in block.cells}
    plan = []
    for session in build_plan(spec):
        cells = tuple(c for c in session.cells if c in mine)
        if cells:
            plan.append(replace(session, cells=cells))
    return plan


def prepare_seconds(spec: Spec, engines: int) -> float:
    """Setting up this many engines and preparing their datasets, at ENGINE_SETUP_S and
    PREPARE_ROWS_PER_SECOND (endpoints need neither)."""
    rows = spec.dataset.tables * spec.dataset.table_size
    return engines * (ENGINE_SETUP_S + rows / PREPARE_ROWS_PER_SECOND)


def serial_seconds(spec: Spec) -> float:
    """The whole matrix on one machine: its plan's sessions and each engine's prepare."""
    plan = build_plan(spec)
    work = sessions_seconds(spec, plan, wall=True)
    return work + prepare_seconds(spec, sum(not e.is_endpoint for e in spec.engines))


def shard_seconds(spec: Spec, shard_blocks: list[Block]) -> tuple[float, float]:
    """A shard's warm-ups and measurements, and its preparing (each engine once)."""
    engines = {s.engine for b in shard_blocks for s in b.sessions}
    prepared = [e for e in engines if not spec.engine(e).is_endpoint]
    canary = 0.0
    if spec.distribute.canary:
        canary = 2 * (spec.distribute.canary_seconds + 20)  # start and end, short warm-ups
    return sum(b.seconds for b in shard_blocks) + canary, prepare_seconds(spec, len(prepared))
