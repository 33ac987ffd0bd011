"""What `oltplab plan` asks and estimates: the spec as the command line revises it, its
blocks dealt to shards with each shard's time, and the whole matrix on one machine beside
them. Adaptive cells count the seconds they are expected to keep (plan/lengths.py), the
fixed-length figure said beside."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import get_args

from oltplab.base.asking import (
    MARGIN,
    margin_option,
    measure_option,
    option,
    spec_argument,
)
from oltplab.base.errors import OltplabError
from oltplab.base.given import measure_of, parse_percent
from oltplab.base.metrics import Measure
from oltplab.base.sizes import duration_text
from oltplab.base.telling import Note, Rows, Said, Told
from oltplab.distribute.schedulers import shards_option
from oltplab.plan.blocks import Block, assign, blocks, serial_seconds, shard_seconds
from oltplab.plan.lengths import ONE_REPETITION, ExpectedLengths, expected_spec
from oltplab.plan.preparing import assumed
from oltplab.spec import Spec, load_spec, revised_spec
from oltplab.spec.distribute import BlockDimension
from oltplab.store.directory import REPLAY_JSON


class CellLength(StrEnum):
    fixed = "fixed"
    adaptive = "adaptive"


@dataclass(frozen=True, kw_only=True)
class PlanAsked:
    spec_path: Path = spec_argument()
    shards: int = shards_option(1)
    block: str | None = option(
        None,
        "Try another cut than the spec's [distribute] block, e.g. placement,tier,workload,threads.",
    )
    margin: str | None = margin_option(
        "also print the paired rounds and the machine time this host needs for every "
        "comparison to be decided against ±PCT, from its calibration (oltplab calibrate)."
    )
    measure: str = measure_option()
    calibrate: bool = option(
        False,
        "With --margin on a host without a calibration of the spec's order of rounds: measure "
        "one first (oltplab calibrate, about 10 minutes), then plan.",
        "--calibrate",
    )
    repetitions: int | None = option(
        None, "Plan this many repetitions instead of the spec's.", min=1, max=1000
    )
    stop: CellLength | None = option(
        None,
        "Plan cells of fixed length or adaptive ones (ending once settled) instead of the "
        "spec's [protocol] stop.",
    )
    replayed: Path | None = option(
        None,
        "Adaptive: expect cells and warm-ups to keep the share of their seconds that oltplab "
        "replay found on this run (else the most conservative share of the project's "
        "long-cell corpus, said to be assumed).",
        "--from",
        metavar="RESULTS",
    )


# The paired rounds every comparison needs on this host against a margin, on a measure:
# this host's calibrations are kept by the experiments layer, above this one.
RoundsFor = Callable[[Spec, float, Measure], tuple[Said, ...]]


def planned(asked: PlanAsked, rounds_for: RoundsFor) -> Told:
    """The plan asked for, with the rounds against --margin when one is given. Every option
    is checked, and the rounds made (what stops them, no calibration, is the only line),
    before anything is said."""
    spec = load_spec(asked.spec_path)
    margin = parse_percent(asked.margin, MARGIN) if asked.margin is not None else None
    chosen = measure_of(asked.measure)
    stop = asked.stop.value if asked.stop is not None else None
    revision = PlanRevision(asked.block, asked.repetitions, stop, asked.replayed)
    matrix = expected_matrix(spec, asked.spec_path, revision)
    rounds = rounds_for(matrix.spec, margin, chosen) if margin is not None else ()
    return dealt(matrix, asked.shards).told(asked.spec_path, rounds)


@dataclass(frozen=True)
class PlanRevision:
    """What the command line plans instead of the spec's own; None keeps the spec's."""

    block: str | None = None  # the dimensions, comma-separated
    repetitions: int | None = None
    stop: str | None = None  # fixed or adaptive
    replayed: Path | None = None  # a run `oltplab replay` replayed: adaptive cells keep its shares


@dataclass(frozen=True)
class ExpectedMatrix:
    spec: Spec  # revised, its adaptive cells and warm-ups at their expected lengths
    fixed: Spec  # revised, every phase at its full length
    lengths: ExpectedLengths | None  # None where cells are of fixed length


def _revised(spec: Spec, origin: Path, revision: PlanRevision) -> Spec:
    given: list[str] = []
    revised: dict[str, dict[str, object]] = {"distribute": {}, "protocol": {}}
    if revision.block is not None:
        dims = [part.strip() for part in revision.block.split(",") if part.strip()]
        known = get_args(BlockDimension)
        if unknown := [d for d in dims if d not in known]:
            raise OltplabError(
                f"--block {revision.block}: {', '.join(unknown)} is not a dimension; expected "
                f"some of {', '.join(known)}, comma-separated (engines and repetitions are "
                "never cut)"
            )
        revised["distribute"]["block"] = dims
        given.append(f"--block {revision.block}")
    if revision.repetitions is not None:
        revised["protocol"]["repetitions"] = revision.repetitions
        given.append(f"--repetitions {revision.repetitions}")
    if revision.stop is not None:
        revised["protocol"]["stop"] = revision.stop
        given.append(f"--stop {revision.stop}")
    if not given:
        return spec
    return revised_spec(spec, f"{origin} with {' '.join(given)}", **revised)


def expected_matrix(spec: Spec, origin: Path, revision: PlanRevision) -> ExpectedMatrix:
    """The spec revised, and as its cells are expected to run."""
    fixed = _revised(spec, origin, revision)
    replayed = revision.replayed
    if fixed.protocol.stop != "adaptive":
        if replayed is not None:
            raise OltplabError("--from RESULTS: only adaptive cells use it; add --stop adaptive")
        return ExpectedMatrix(fixed, fixed, None)
    lengths = (
        ExpectedLengths.replayed(replayed, replayed / REPLAY_JSON)
        if replayed
        else ExpectedLengths.assumed()
    )
    return ExpectedMatrix(expected_spec(fixed, lengths), fixed, lengths)


@dataclass(frozen=True)
class ShardLoad:
    blocks: tuple[Block, ...]
    work_seconds: float  # warm-ups, measurements and canaries
    prepare_seconds: float

    @property
    def wall_seconds(self) -> float:
        return self.work_seconds + self.prepare_seconds


@dataclass(frozen=True)
class ShardPlan:
    matrix: ExpectedMatrix
    blocks: int  # how many blocks the matrix is cut into
    shards: tuple[ShardLoad, ...]
    fixed_longest: float | None  # the longest shard had every cell run whole (adaptive only)

    @property
    def title(self) -> str:
        spec = self.matrix.spec
        cut = "/".join(spec.distribute.block) or "nothing"
        return f"{spec.name}: {self.blocks} block(s) ({cut}) on {len(self.shards)} shard(s)"

    def rows(self) -> list[tuple[str, ...]]:
        """Each shard's blocks, cells, and times apart and together."""
        return [
            (
                str(index),
                "; ".join(b.label for b in shard.blocks) or "(idle)",
                str(sum(len(b.cells) for b in shard.blocks)),
                *map(
                    duration_text, (shard.work_seconds, shard.prepare_seconds, shard.wall_seconds)
                ),
            )
            for index, shard in enumerate(self.shards, start=1)
        ]

    def overall(self) -> str:
        longest = max(shard.wall_seconds for shard in self.shards)
        return _overall(self.matrix.spec, len(self.shards), longest)

    def preparing(self) -> str | None:
        if len(self.shards) == 1:
            return None
        return (
            "prepare: each engine's dataset prepared once, by the first shard to reach it (each "
            "shard starts from another engine), and copied by the others from the shared "
            f"snapshot store (assumed: {assumed(self.matrix.spec)})"
        )

    def adaptive(self) -> tuple[str, ...]:
        """The adaptive cells' expected lengths, and what their basis changed in its replay."""
        lengths, fixed = self.matrix.lengths, self.matrix.fixed.protocol
        if lengths is None:
            return ()
        protocol = self.matrix.spec.protocol
        return (
            f"adaptive cells: about {protocol.measure_seconds} s of {fixed.measure_seconds} s, "
            f"warm-ups {protocol.warmup_ro_seconds} s and {protocol.warmup_rw_seconds} s of "
            f"{fixed.warmup_ro_seconds} s and {fixed.warmup_rw_seconds} s ({lengths.basis})",
            f"verdicts that share changed in its replay: {lengths.verdicts()}",
        )

    def fixed_length(self) -> str | None:
        """With adaptive cells: the same matrix had every cell run whole."""
        if self.fixed_longest is None:
            return None
        fixed = _fixed_length(self.matrix.fixed)
        return f"fixed-length cells: {_overall(fixed, len(self.shards), self.fixed_longest)}"

    def idle(self) -> str | None:
        if len(self.shards) <= self.blocks:
            return None
        return (
            f"only {self.blocks} block(s): {len(self.shards) - self.blocks} shard(s) would be "
            'idle; cut finer with [distribute] block = ["placement", "tier", "workload", '
            '"threads"] (or try --block)'
        )

    def told(self, spec_path: Path, rounds: tuple[Said, ...]) -> Told:
        """The shards' table, the times and warnings beside it, the rounds, and the command
        that runs it: on this machine, or through a scheduler."""
        columns = ("shard", "blocks", "cells", "measure + warm-up", "prepare", "wall time")
        right = tuple(c for c in columns if c != "blocks")
        table = Rows(self.title, columns, tuple(self.rows()), right=right, folded=columns)
        said: list[Said] = [table]
        said += [s for s in (self.overall(), self.preparing(), *self.adaptive()) if s is not None]
        if self.matrix.lengths is not None and self.matrix.spec.protocol.repetitions == 1:
            said.append(Note(ONE_REPETITION))
        if (fixed := self.fixed_length()) is not None:
            said.append(fixed)
        if (idle := self.idle()) is not None:
            said.append(Note(idle))
        shards = len(self.shards)
        return Told(
            (*said, *rounds),
            f"oltplab run {spec_path} --results DIR (on this machine; --shards N plans the "
            "matrix over N machines)"
            if shards == 1
            else f"oltplab submit slurm {spec_path} --shards {shards} --results DIR (or, on "
            f"each machine, oltplab run {spec_path} --shard K/{shards} --results DIR "
            "--snapshots SHARED)",
        )


def _fixed_length(spec: Spec) -> Spec:
    return spec.model_copy(update={"protocol": spec.protocol.model_copy(update={"stop": "fixed"})})


def dealt(matrix: ExpectedMatrix, count: int) -> ShardPlan:
    """The matrix's blocks dealt to `count` shards, by their expected lengths."""
    found = blocks(matrix.spec)
    mine = assign(found, count)
    loads = tuple(
        ShardLoad(tuple(shard), work, prepare)
        for shard, (work, prepare) in zip(mine, shard_seconds(matrix.spec, mine), strict=True)
    )
    fixed_longest = None
    if matrix.lengths is not None:
        fixed = _fixed_length(matrix.fixed)
        fixed_longest = max(sum(t) for t in shard_seconds(fixed, assign(blocks(fixed), count)))
    return ShardPlan(matrix, len(found), loads, fixed_longest)


def _overall(spec: Spec, shards: int, longest: float) -> str:
    """The whole matrix on one machine, and on the shards (their longest)."""
    serial = serial_seconds(spec)
    speedup = serial / longest
    versus = (
        f"{speedup:.1f}x faster" if speedup >= 1
        else f"{1 / speedup:.1f}x slower: every shard sets up its own engines and datasets"
    )  # fmt: skip
    return f"one machine: about {duration_text(serial)}" + (
        f"; {shards} shards: {duration_text(longest)} (the longest shard; {versus})"
        if shards > 1
        else ""
    )
