"""Whether to measure more: the round policies. Each says, from what the open Run has
measured so far, which cells it wants next (a Round) or that it wants no more; the runner
asks them in order, measures the first round one wants, and asks them all again, until
none wants more. So the planned cells come first, then adaptive rounds, remeasurements of
disturbed cells, and a search's batches, each seeing what the others added: a batch's
disturbed cells are measured again before the search judges it.

A policy is one class; a request names the built-in ones (`POLICIES`), and a caller may
pass its own (experiments/until_answered.py's search)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from oltplab.measure.ordering import Order
from oltplab.measure.request import RunRequest
from oltplab.measure.run import Round, Run
from oltplab.plan import (
    Cell,
    Session,
    again,
    build_plan,
    cells_of,
    extra_round,
    needing_more,
)
from oltplab.spec import Spec
from oltplab.store.status import Status
from oltplab.sysbench.validity import INTERFERENCE

log = logging.getLogger("oltplab")
# How often a disturbed cell is measured again before its last result stands, flagged.
MAX_RERUNS = 2


class RoundPolicy(Protocol):
    def next_round(self, run: Run) -> Round | None: ...


def measure_rounds(run: Run, order: Order, policies: list[RoundPolicy]) -> None:
    """Round after round, while a policy wants more."""
    while (round_ := _wanted(run, policies)) is not None:
        order.measure(round_)


def more_repetitions(run: Run, spec: Spec, text: str, before: int) -> Round:
    """The cells of `spec` (the run's own with more repetitions) beyond repetition `before`,
    added to the open run, whose results then answer to that spec: the round of those still
    pending (a resumed run finds some measured already)."""
    sessions = build_plan(spec)
    run.respec(spec, text)
    run.add_cells([c for c in cells_of(sessions) if c.repetition > before])
    status = run.ledger.status_of()
    cells = {s: [c for c in s.cells if status.get(c.key) == Status.PENDING] for s in sessions}
    round_ = Round([s for s in sessions if cells[s]], cells)
    run.expect(round_)
    return round_


def _wanted(run: Run, policies: list[RoundPolicy]) -> Round | None:
    for policy in policies:
        if (round_ := policy.next_round(run)) is not None:
            return round_
    return None


class Planned:
    """The plan's pending cells, once."""

    def __init__(self, round_: Round) -> None:
        self._round: Round | None = round_

    def next_round(self, run: Run) -> Round | None:
        round_, self._round = self._round, None
        return round_


def first_rounds(sessions: list[Session]) -> list[Session]:
    """The sessions of the first repetition: the template further rounds are made from."""
    return [s for s in sessions if all(c.repetition == 1 for c in s.cells)] or sessions


class UntilCv:
    """Cell groups whose TPS still varies more than the CV asked, one more round each,
    up to a number of repetitions."""

    def __init__(self, sessions: list[Session], cv: float, max_repetitions: int) -> None:
        self.template = first_rounds(sessions)
        self.cv = cv
        self.max_repetitions = max_repetitions

    def next_round(self, run: Run) -> Round | None:
        tps: dict[Cell, list[float]] = {}
        reps: dict[Cell, int] = {}
        for row in run.ledger.cells():
            group = row.cell.group
            reps[group] = max(reps.get(group, 0), row.repetition)
            if row.status == Status.DONE and row.tps is not None:
                tps.setdefault(group, []).append(row.tps)
        needing = needing_more(tps, self.cv, self.max_repetitions)
        needing = {g for g in needing if reps[g] < self.max_repetitions}
        if not needing:
            return None
        sessions = extra_round(self.template, needing, {g: reps[g] + 1 for g in reps})
        log.info("adaptive: %d cell group(s) above CV %.3f; one more round", len(needing), self.cv)
        round_ = Round.whole(sessions)
        run.add_cells(cells_of(sessions))
        run.expect(round_)
        return round_


class RerunDisturbed:
    """Each cell other load disturbed (flag interference) measured again, with the cells
    of its round when the engines were interleaved (so a comparison stays paired within a
    round); each earlier result is kept aside in the ledger. At most MAX_RERUNS times a
    cell: a host that is never quiet is told, not waited out."""

    def __init__(self, sessions: list[Session], paired: bool) -> None:
        self.template = first_rounds(sessions)
        self.paired = paired

    def next_round(self, run: Run) -> Round | None:
        rows = run.ledger.cells()
        disturbed = [
            row.cell
            for row in rows
            if row.status == Status.DONE
            and INTERFERENCE in row.flags
            and run.measured_before.get(row.key, 0) < MAX_RERUNS
        ]
        if not disturbed:
            return None
        # A round: the cells of one repetition of a group, whatever their engine.
        rounds = {replace(c, engine="") for c in disturbed}
        done = [row.cell for row in rows if row.status == Status.DONE]
        chosen = {
            c for c in done if c in disturbed or (self.paired and replace(c, engine="") in rounds)
        }
        log.info("%d cell(s) disturbed by other load: measured again", len(disturbed))
        for cell in sorted(chosen, key=lambda c: c.key):
            run.ledger.supersede(cell, "interference" if cell in disturbed else "round-mate")
            run.measured_before[cell.key] = run.measured_before.get(cell.key, 0) + 1
        round_ = Round.whole(again(self.template, chosen))
        run.expect(round_)
        return round_


# Makes a policy from a request and its plan's sessions: None when the request does not
# ask for it.
PolicyMaker = Callable[[RunRequest, list[Session]], RoundPolicy | None]
POLICIES: list[PolicyMaker] = []


def register(make: PolicyMaker) -> PolicyMaker:
    """A round policy a request may ask for, asked after those registered before it."""
    POLICIES.append(make)
    return make


def asked_for(request: RunRequest, sessions: list[Session]) -> list[RoundPolicy]:
    return [p for make in POLICIES if (p := make(request, sessions)) is not None]


def _until_cv(request: RunRequest, sessions: list[Session]) -> RoundPolicy | None:
    if request.until_cv is None:
        return None
    return UntilCv(sessions, request.until_cv, request.max_repetitions)


def _rerun_disturbed(request: RunRequest, sessions: list[Session]) -> RoundPolicy | None:
    if not request.rerun_disturbed:
        return None
    return RerunDisturbed(sessions, paired=request.spec.protocol.order != "as-listed")


register(_until_cv)
register(_rerun_disturbed)
