"""How a round's cells meet their engines: the orders. Each is one class registered under
the spec's `protocol.order` name; the runner asks it to measure round after round of one
open Run and closes it when the run ends.

An order that keeps its engines running (alternating, sliced) starts each engine once per
tier (and host) and keeps it running across rounds, including the rounds a policy adds
later (more repetitions, a search's next batch): only a tier change or the run's end stops
it, since a restart means a restored datadir and a warm-up, which the protocol asks for
once per session, not once per batch of rounds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from oltplab.measure.run import Round, Run
from oltplab.measure.session import OpenSession
from oltplab.plan import Cell, Session
from oltplab.spec.fields import ORDER_NAMES


class Order(Protocol):
    def measure(self, round_: Round) -> None: ...
    def close(self) -> None: ...


ORDERS: dict[str, Callable[[Run], Order]] = {}


def register(*names: str) -> Callable[[Callable[[Run], Order]], Callable[[Run], Order]]:
    """Adds an order under these names, which a spec's `protocol.order` may then give."""

    def add(factory: Callable[[Run], Order]) -> Callable[[Run], Order]:
        for name in names:
            ORDERS[name] = factory
            if name not in ORDER_NAMES:
                ORDER_NAMES.append(name)
        return factory

    return add


def order_of(run: Run) -> Order:
    return ORDERS[run.spec.protocol.order](run)


@register("as-listed", "interleaved", "random")
class AsListed:
    """Each session in its turn, its engine started for it and stopped after it (the
    plan has already interleaved or shuffled the sessions when the spec asks)."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def measure(self, round_: Round) -> None:
        for session in round_.sessions:
            chosen = round_.cells.get(session, [])
            if not chosen:
                continue
            opened = OpenSession.open(self.run, session, chosen)
            if opened is None:
                continue
            try:
                opened.measure_cells(session, chosen)
            finally:
                opened.close()

    def close(self) -> None:
        pass


class Running:
    """The engines of one tier (on one host) started and kept running, each opened for
    the heaviest session it serves in that tier (read-write when any writes)."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self._tier: tuple[str, str] | None = None
        self.engines: dict[str, OpenSession] = {}

    def enter(self, group: list[Session]) -> None:
        """The tier of these sessions; the engines of another are stopped first."""
        tier = (group[0].tier, group[0].host)
        if tier != self._tier:
            self.close()
            self._tier = tier

    def serving(
        self, group: list[Session], session: Session, cells: list[Cell]
    ) -> OpenSession | None:
        """The session's engine, started now if it is not running (None: it could not be,
        and the cells are failed)."""
        if session.engine not in self.engines:
            first = heaviest(self.run, [s for s in group if s.engine == session.engine])
            opened = OpenSession.open(self.run, first, cells)
            if opened is None:
                return None
            self.engines[session.engine] = opened
        return self.engines[session.engine]

    def drop(self, engine: str) -> None:
        self.engines.pop(engine).close()

    def close(self) -> None:
        while self.engines:
            self.drop(next(iter(self.engines)))


@register("alternating")
class Alternating:
    """The sessions in their order, each engine started once per tier and kept running
    beside the others, so that the cells of a round follow each other within seconds: a
    paired comparison then sees the host as it was seconds apart, not the minute a
    restart and a warm-up take (drift that size is what this host shows)."""

    def __init__(self, run: Run) -> None:
        self.running = Running(run)

    def measure(self, round_: Round) -> None:
        for group in tier_groups(round_.sessions):
            self.running.enter(group)
            for session in group:
                chosen = round_.cells.get(session, [])
                opened = self.running.serving(group, session, chosen) if chosen else None
                if opened is not None and not opened.measure_cells(session, chosen):
                    self.running.drop(session.engine)

    def close(self) -> None:
        self.running.close()


def tier_groups(sessions: list[Session]) -> list[list[Session]]:
    """The sessions by tier and host, in the order of each group's first session."""
    found: dict[tuple[str, str], list[Session]] = {}
    for session in sessions:
        found.setdefault((session.tier, session.host), []).append(session)
    return list(found.values())


def heaviest(run: Run, sessions: list[Session]) -> Session:
    writing = [s for s in sessions if not run.spec.workload(s.workload).reads_only]
    return (writing or sessions)[0]
