"""On-CPU profiles, per transaction: where a release spends more of its time per
transaction than another, function by function and stack by stack."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from oltplab.analysis.dataset import CellRecord
from oltplab.store.directory import stem_of
from oltplab.telemetry.profiler import folded_file, read_folded


@dataclass(frozen=True)
class Profile:
    """One engine's stacks over its profiled cells, in samples per transaction."""

    engine: str
    stacks: dict[str, float]  # "root;...;leaf" -> samples per transaction
    samples: int
    transactions: int

    def own(self) -> dict[str, float]:
        """Per function: samples per transaction it was running itself (the stack's leaf),
        not in a function it called: a callee's growth is not its callers' (every stack
        of a server thread has start_thread in it)."""
        found: dict[str, float] = {}
        for stack, weight in self.stacks.items():
            leaf = stack.rsplit(";", 1)[-1]
            found[leaf] = found.get(leaf, 0.0) + weight
        return found


def profile_of(engine: str, cells: list[CellRecord]) -> Profile | None:
    """The engine's profile over the cells that have one, per transaction."""
    stacks: Counter[str] = Counter()
    transactions = 0
    for cell in cells:
        if cell.engine != engine or not cell.artifact or not cell.measured:
            continue
        folded = folded_file(stem_of(Path(cell.source) / cell.artifact))
        if not folded.is_file() or not cell.tps or not cell.duration_s:
            continue
        stacks.update(read_folded(folded))
        transactions += round(cell.tps * cell.duration_s)
    if not stacks or not transactions:
        return None
    return Profile(
        engine,
        {stack: count / transactions for stack, count in stacks.items()},
        sum(stacks.values()),
        transactions,
    )


@dataclass(frozen=True)
class FunctionChange:
    function: str
    before: float  # samples per transaction of its own time
    after: float

    @property
    def gained(self) -> float:
        return self.after - self.before


def gained_most(before: Profile, after: Profile, count: int = 15) -> list[FunctionChange]:
    """The functions whose own samples per transaction grew the most, then fell the most."""
    a, b = before.own(), after.own()
    changes = [FunctionChange(f, a.get(f, 0.0), b.get(f, 0.0)) for f in a.keys() | b.keys()]
    changes.sort(key=lambda c: (-c.gained, c.function))
    return changes[:count]
