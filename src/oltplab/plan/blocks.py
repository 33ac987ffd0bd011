"""A matrix cut into blocks, and blocks dealt to shards.

A block is every engine, every repetition (and by default every thread count) of one
(placement, tier, workload): what one machine measures, interleaved as a single machine
would, so that engine-vs-engine and version-vs-version comparisons never cross machines.
Blocks go to shards longest first, each to the shard with the least work so far (the
LPT rule, within 4/3 of the best possible longest shard), then blocks of the longest shard
are moved or swapped while that shortens it: deterministic for a spec and a shard count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from oltplab.base.errors import OltplabError
from oltplab.plan import Cell, Session, build_plan, sessions_seconds
from oltplab.plan.preparing import prepare_seconds, prepared_engines, shared_prepare_seconds
from oltplab.spec import Spec

BlockKey = tuple[tuple[str, str], ...]  # (dimension, value), in the spec's block order


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
    """Blocks per shard: longest first, each to the shard with the least so far; then
    blocks of the longest shard moved or swapped while that shortens it."""
    shards: list[list[Block]] = [[] for _ in range(count)]
    totals = [0.0] * count
    for block in sorted(found, key=lambda b: (-b.seconds, b.key)):
        target = min(range(count), key=lambda i: (totals[i], i))
        shards[target].append(block)
        totals[target] += block.seconds
    while (step := _shortening(shards, totals)) is not None:
        longest, other, mine, theirs = step
        moved = shards[longest].pop(mine)
        shards[other].append(moved)
        totals[longest] -= moved.seconds
        totals[other] += moved.seconds
        if theirs is not None:
            back = shards[other].pop(theirs)
            shards[longest].append(back)
            totals[longest] += back.seconds
            totals[other] -= back.seconds
    return shards


# Estimates closer than this are equal: a step must gain more, so that the search ends.
_GAIN_S = 1.0


def _shortening(
    shards: list[list[Block]], totals: list[float]
) -> tuple[int, int, int, int | None] | None:
    """The move of one block of the longest shard to another shard, or its swap with a
    shorter block there, that leaves the pair's longer side shortest; None when none
    shortens the longest shard. (Dealing longest first leaves, e.g., two read-write blocks
    on some shards and one read-write and two read-only on others, when read-only ones
    three to a shard and read-write ones two to a shard would be even.)"""
    longest = max(range(len(totals)), key=lambda i: (totals[i], -i))
    best: tuple[float, tuple[int, int, int, int | None]] | None = None
    for other in range(len(shards)):
        if other == longest:
            continue
        for mine, block in enumerate(shards[longest]):
            choices: list[tuple[float, int | None]] = [(block.seconds, None)]
            choices += [(block.seconds - b.seconds, i) for i, b in enumerate(shards[other])]
            for gain, theirs in choices:
                after = max(totals[longest] - gain, totals[other] + gain)
                shortens = gain > 0 and after < totals[longest] - _GAIN_S
                if shortens and (best is None or after < best[0]):
                    best = (after, (longest, other, mine, theirs))
    return None if best is None else best[1]


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


def serial_seconds(spec: Spec) -> float:
    """The whole matrix on one machine: its plan's sessions and each engine's prepare."""
    plan = build_plan(spec)
    work = sessions_seconds(spec, plan, wall=True)
    return work + prepare_seconds(spec, sum(not e.is_endpoint for e in spec.engines))


def shard_seconds(spec: Spec, dealt: list[list[Block]]) -> list[tuple[float, float]]:
    """Each shard's warm-ups, measurements and canaries, and its preparing: alone, each
    engine prepared; as shards of a distributed run, sharing a snapshot store."""
    canary = spec.distribute.parsed_canary
    extra = 2 * (spec.distribute.canary_seconds + 20) if canary else 0.0  # start and end
    engines = [prepared_engines(spec, [s for b in mine for s in b.sessions]) for mine in dealt]
    if len(dealt) == 1:
        preparing = [prepare_seconds(spec, len(engines[0]))]
    else:
        first = canary.engine if canary and not spec.engine(canary.engine).is_endpoint else None
        preparing = shared_prepare_seconds(spec, engines, first)
    return [
        (sum(b.seconds for b in mine) + (extra if mine else 0.0), ready if mine else 0.0)
        for mine, ready in zip(dealt, preparing, strict=True)
    ]
