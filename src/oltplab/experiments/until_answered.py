"""Measure until the question is answered: paired rounds are added to a run until every
comparison is DIFFERENT or SAME against the margin (`analysis/precision`), or the budget is
spent, when the undecided ones end UNKNOWN.

The rounds are sliced (the engines kept running, a round's cells at once in short time
slots) and isolated unless the spec asks otherwise; sliced and alternating rounds are added
a batch at a time, as many as the first batch, since each batch starts the engines again.
Each batch (or interleaved round) is the spec with more repetitions, run into the same
results directory (a spec may add cells), so a killed search resumes like any run and every
round is kept.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any

from oltplab.analysis.dataset import load
from oltplab.analysis.points import Points
from oltplab.analysis.precision import MIN_ROUNDS, UNKNOWN, Answer, answers
from oltplab.base.metrics import Target, measure_named
from oltplab.measure.request import Display, RunRequest
from oltplab.measure.runner import Outcome, run
from oltplab.plan import KEPT_RUNNING
from oltplab.spec import Spec, derived_spec

log = logging.getLogger("oltplab")


def target_of(spec: Spec) -> Target | None:
    protocol = spec.protocol
    if protocol.target_ci_pct is None:
        return None
    budget = protocol.budget_minutes * 60.0 if protocol.budget_minutes else None
    return Target(protocol.target_ci_pct, measure_named(protocol.precision_measure), budget)


def rounds_order(spec: Spec) -> str:
    """How a search runs its rounds: as the spec says when it names interleaved,
    alternating or sliced rounds; otherwise sliced, which paired most tightly for the same
    machine time here (README, "Measure until answered", has bench/precision.py's figures)."""
    order = spec.protocol.order
    return order if order in ("interleaved", "alternating", "sliced") else "sliced"


def with_rounds(spec: Spec, rounds: int, **protocol: Any) -> tuple[Spec, str]:
    """The spec with this many paired rounds in its search's order (and any other
    protocol keys given); isolated unless the spec says otherwise, since the server and
    sysbench on CPUs of their own spread less between rounds here (bench/precision.py)."""
    data = spec.model_dump(mode="json", exclude_none=True)
    isolation = spec.protocol.isolated_unless_said()
    data["protocol"].update(
        repetitions=rounds, order=rounds_order(spec), isolation=isolation, **protocol
    )
    return derived_spec(data, "precision round")


@dataclass
class Search:
    outcome: Outcome
    answers: list[Answer] = field(default_factory=list)
    rounds: int = 0
    stopped: str = ""  # why no more rounds were added


def measure_until_answered(request: RunRequest, display: Display) -> Search:
    """Rounds until every comparison is decided or the budget is spent."""
    spec, results = request.spec, request.results
    target = target_of(spec)
    assert target is not None, "the spec sets protocol.target_ci_pct"
    started = time.monotonic()
    rounds = max(spec.protocol.repetitions, MIN_ROUNDS)
    # Alternating engines restart for each batch of rounds added: a batch as long as the
    # first keeps restarts and warm-ups a small part of the time.
    step = rounds if rounds_order(spec) in KEPT_RUNNING else 1
    while True:
        current, text = with_rounds(spec, rounds)
        outcome = run(replace(request, spec=current, spec_text=text), display)
        search = Search(outcome, rounds=rounds)
        if outcome.interrupted or outcome.failed:
            search.stopped = "interrupted" if outcome.interrupted else "a cell failed"
            return search
        search.answers = answers(Points(load([results]), measure=target.measure), target)
        undecided = [a for a in search.answers if a.verdict == UNKNOWN]
        elapsed = time.monotonic() - started
        log.info(
            "precision: %d of %d comparisons decided after %d rounds (%.0f s)",
            len(search.answers) - len(undecided), len(search.answers), rounds, elapsed,
        )  # fmt: skip
        if not undecided:
            search.stopped = "every comparison decided"
            return search
        per_round = elapsed / rounds
        if target.budget_seconds is not None and elapsed + per_round > target.budget_seconds:
            search.stopped = f"the budget ran out ({target.budget_seconds / 60:g} min)"
            return search
        display.note(
            f"{len(undecided)} comparison(s) undecided after {rounds} rounds; "
            + ("one more round" if step == 1 else f"{step} more rounds")
        )
        rounds += step
