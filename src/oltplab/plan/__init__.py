"""The matrix as an ordered list of server sessions, each a list of measured cells.

A session is one engine started on a fresh copy of its dataset snapshot with one tier's
configuration, warmed up for one workload, then measured at each thread count.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, replace
from typing import TypeVar

from oltplab.base.wording import counted
from oltplab.spec import LOCAL_HOST, PlacementSpec, Spec, WorkloadSpec
from oltplab.workloads.kinds import kind_of

# The reference report's two workloads keep its short scenario names; every other workload
# is its own scenario, so two workloads never share a table.
_SHORT_SCENARIOS = {"oltp_read_write": "rw", "oltp_read_only": "ro"}

T = TypeVar("T")


@dataclass(frozen=True)
class Scenario:
    """What one set of tables holds: a workload, measured with sysbench beside the engine
    or over a network. Its name (`rw-local`, `balanced-network`) is a label for tables and
    keys; code asks the fields, never the name."""

    workload: str
    network: bool = False
    rate: int = 0  # transactions a second offered, all threads together; 0: closed loop

    @property
    def label(self) -> str:
        """The workload's short name: rw, ro, or the workload's own."""
        return _SHORT_SCENARIOS.get(self.workload, self.workload)

    @property
    def name(self) -> str:
        rate = f"-{self.rate}tps" if self.rate else ""
        return f"{self.label}-{'network' if self.network else 'local'}{rate}"

    @property
    def local(self) -> Scenario:
        """The same workload with sysbench beside the engine: what a network run is judged by."""
        return replace(self, network=False)

    @property
    def closed(self) -> Scenario:
        """The same workload in closed loop: what an open-loop run is set beside."""
        return replace(self, rate=0)

    @property
    def reference(self) -> bool:
        """One of the reference report's own scenarios (read-write or read-only)."""
        return self.workload in _SHORT_SCENARIOS


@dataclass(frozen=True)
class Cell:
    engine: str
    tier: str
    workload: str
    threads: int
    repetition: int
    network: bool = False  # sysbench reaches the engine over a network
    rate: int = 0  # open loop: transactions a second offered; 0: closed loop

    @property
    def scenario(self) -> Scenario:
        return Scenario(self.workload, self.network, self.rate)

    @property
    def group(self) -> Cell:
        """The cell without its repetition (numbered 0): what repetitions repeat."""
        return replace(self, repetition=0)

    @property
    def label(self) -> str:
        """How progress and the log name it: `mysql-8.0.31 128M oltp_read_write 4 threads`."""
        rep = f" run {self.repetition}" if self.repetition > 1 else ""
        return f"{self.engine} {self.tier} {self.workload} {counted(self.threads, 'thread')}{rep}"

    def describe(self) -> str:
        rep = f" run {self.repetition}" if self.repetition else ""
        return f"{self.engine} {self.scenario.name} {self.tier} {self.workload} {self.threads}{rep}"

    @property
    def key(self) -> str:
        return "|".join(
            (
                self.engine,
                self.scenario.name,
                self.tier,
                self.workload,
                str(self.threads),
                str(self.repetition),
            )
        )


@dataclass(frozen=True)
class Session:
    engine: str
    tier: str
    workload: str
    cells: tuple[Cell, ...]
    host: str = LOCAL_HOST  # where the engine runs

    @property
    def network(self) -> bool:
        return self.host != LOCAL_HOST


def build_plan(spec: Spec) -> list[Session]:
    """Sessions in the order the spec asks for.

    as-listed runs every repetition inside one session per engine, tier and workload.
    interleaved and random give each repetition its own session, cycling engines within a
    round so that drift on the host hits every engine alike; each round starts one engine
    later than the last, so that no engine always runs first (on a small host the first
    session after another's differs by 10-20%, which two engines in a fixed order would
    read as a difference between them).
    """
    reps = range(1, spec.protocol.repetitions + 1)

    def session(
        engine: str, placement: PlacementSpec, tier: str, workload: WorkloadSpec, rounds: range
    ) -> Session:
        cells = tuple(
            Cell(engine, tier, workload.name, threads, rep, placement.network, rate)
            for threads in spec.protocol.threads
            for rate in rates_of(spec, workload)
            for rep in rounds
        )
        return Session(engine, tier, workload.name, cells, placement.server)

    def placements(engine: str) -> list[PlacementSpec]:
        # An endpoint is wherever it is: it is measured once, not once per placement.
        return spec.placements[:1] if spec.engine(engine).is_endpoint else spec.placements

    tiers = [tier.name for tier in spec.tier_list]
    engines = [engine.name for engine in spec.engines]
    if spec.protocol.order == "as-listed":
        return [
            session(engine, placement, tier, workload, reps)
            for engine in engines
            for placement in placements(engine)
            for tier in tiers
            for workload in spec.workloads
        ]
    # Tiers and workloads take turns too: they are compared with each other as engines are.
    sessions = [
        session(engine, placement, tier, workload, range(rep, rep + 1))
        for rep in reps
        for tier in turns(tiers, rep)
        for workload in turns(spec.workloads, rep)
        for placement in spec.placements
        for engine in turns(engines, rep)
        if placement in placements(engine)
    ]
    if spec.protocol.order == "random":
        random.Random(spec.protocol.seed).shuffle(sessions)
    return sessions


# What a plan costs beyond its warm-ups and measurements, from the timestamps of
# oltplab.log on a 2-core VM: restoring the datadir and starting the server for a session,
# and per cell sysbench's start and the collectors' last second.
SESSION_OVERHEAD_S = 2.5
CELL_OVERHEAD_S = 1.5


def session_seconds(
    spec: Spec, session: Session, cells: int, wall: bool = False, starts: bool = True
) -> float:
    """Warm-ups and measurements of a session measuring this many cells; with `wall`, the
    time it takes, its restarts and sysbench's starts included. A session that finds its
    engine running (`starts` False: alternating) has no warm-up or restart of its own."""
    workload = spec.workload(session.workload)
    total = float(cells * spec.protocol.measure_seconds)
    if starts:
        total += sum(seconds for _, seconds in kind_of(workload).warm_ups(spec, workload))
    overhead = (SESSION_OVERHEAD_S if starts else 0.0) + cells * CELL_OVERHEAD_S
    return total + (overhead if wall else 0.0)


# Orders whose engines start once per tier and stay running for all of its rounds.
KEPT_RUNNING = ("alternating", "sliced")


def starting(spec: Spec, sessions: list[Session]) -> list[bool]:
    """Which sessions start their engine: all of them, but when alternating only each
    engine's first of a tier (on a host), the engine then running for the rest."""
    if spec.protocol.order not in KEPT_RUNNING:
        return [True] * len(sessions)
    seen: set[tuple[str, str, str]] = set()
    found = []
    for session in sessions:
        key = (session.engine, session.tier, session.host)
        found.append(key not in seen)
        seen.add(key)
    return found


def _seconds(spec: Spec, todo: list[tuple[Session, int]], wall: bool) -> float:
    """Sessions, each measuring this many cells, in the order given."""
    starts = starting(spec, [s for s, _ in todo])
    return sum(
        session_seconds(spec, s, n, wall, first) for (s, n), first in zip(todo, starts, strict=True)
    )


def sessions_seconds(spec: Spec, sessions: list[Session], wall: bool = False) -> float:
    """All the sessions' cells, in the order given."""
    return _seconds(spec, [(s, len(s.cells)) for s in sessions], wall)


def plan_seconds(spec: Spec, sessions: list[Session], pending: set[str]) -> float:
    """The benchmark seconds (warm-ups and measurements) of the sessions' pending cells."""
    counts = [sum(c.key in pending for c in session.cells) for session in sessions]
    return _seconds(spec, [(s, n) for s, n in zip(sessions, counts, strict=True) if n], False)


def turns(members: list[T], repetition: int) -> list[T]:
    """Engines (tiers, workloads) in the order of their turns in a round: rotated by one
    each round."""
    start = (repetition - 1) % len(members) if members else 0
    return members[start:] + members[:start]


def rates_of(spec: Spec, workload: WorkloadSpec) -> list[int]:
    """The loads a workload's cells run at: 0 (closed loop), then each rate offered."""
    rates = spec.protocol.rates if workload.rates is None else workload.rates
    return ([0] if spec.protocol.closed_loop or not rates else []) + sorted(set(rates))


def cells_of(plan: list[Session]) -> list[Cell]:
    return [cell for session in plan for cell in session.cells]


def needing_more(tps: dict[Cell, list[float]], target_cv: float, max_repetitions: int) -> set[Cell]:
    """Groups whose repetitions still disagree by more than the target coefficient of
    variation (a single repetition has none yet), and that may still be repeated."""
    result = set()
    for group, values in tps.items():
        if len(values) >= max_repetitions:
            continue
        if (
            len(values) < 2
            or statistics.mean(values) == 0
            or statistics.stdev(values) / statistics.mean(values) > target_cv
        ):
            result.add(group)
    return result


def extra_round(
    template: list[Session], needing: set[Cell], next_rep: dict[Cell, int]
) -> list[Session]:
    """One more repetition of each group that needs it, engines interleaved as in a round."""
    return again(template, {replace(group, repetition=next_rep[group]) for group in needing})


def again(template: list[Session], cells: set[Cell]) -> list[Session]:
    """Sessions that measure these cells (again, or as extra repetitions), a round at a
    time, the engines of each round interleaved as the plan interleaves them."""
    rounds: dict[int, set[Cell]] = {}
    for cell in cells:
        rounds.setdefault(cell.repetition, set()).add(cell.group)
    sessions = []
    for repetition, groups in sorted(rounds.items()):
        for session in template:
            chosen = tuple(
                replace(c, repetition=repetition)
                for c in session.cells
                if c.repetition == 1 and c.group in groups
            )
            if chosen:
                sessions.append(
                    Session(session.engine, session.tier, session.workload, chosen, session.host)
                )
    tiers = list(dict.fromkeys(s.tier for s in template))
    workloads = list(dict.fromkeys(s.workload for s in template))
    engines = list(dict.fromkeys(s.engine for s in template))

    def turn(s: Session) -> tuple[int, int, int, int]:
        rep = s.cells[0].repetition
        return (
            rep,
            turns(tiers, rep).index(s.tier),
            turns(workloads, rep).index(s.workload),
            turns(engines, rep).index(s.engine),
        )

    # Sorting is stable: one engine's placements keep their order within its turn.
    return sorted(sessions, key=turn)
