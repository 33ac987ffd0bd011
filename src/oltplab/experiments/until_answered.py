"""Measure until the question is answered: paired rounds are added to a run until every
comparison is DIFFERENT or SAME against the margin (`analysis/precision`), or the budget is
spent, when the undecided ones end UNKNOWN.

The rounds are sliced (the engines kept running, a round's cells at once in short time
slots) and isolated unless the spec asks otherwise; sliced and alternating rounds are added
a batch at a time, as many as the first batch, since each batch starts the engines again.
Each batch (or interleaved round) is the spec with more repetitions, run into the same
results directory (a spec may add cells), so a killed search resumes like any run and every
round is kept. The budget is for the whole search across resumes: see TimeSpent.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import Any

from oltplab.analysis.dataset import load
from oltplab.analysis.points import Points
from oltplab.analysis.precision import MIN_ROUNDS, UNKNOWN, Answer, answers
from oltplab.base.errors import EXIT_BAD_INPUT, OltplabError
from oltplab.base.metrics import Target, measure_named
from oltplab.base.nesting import load_json
from oltplab.base.sizes import duration_text
from oltplab.measure.request import Display, RunRequest
from oltplab.measure.runner import Outcome, log_to, run
from oltplab.plan import KEPT_RUNNING
from oltplab.spec import Spec, derived_spec
from oltplab.store.directory import ResultsDir
from oltplab.store.files import os_problem, write_atomic
from oltplab.store.lock import holder
from oltplab.sysbench.kinds import precision_measure

log = logging.getLogger("oltplab")
# How often a search writes down its time spent: a kill loses at most this much of it.
SPENT_EVERY_SECONDS = 2.0


# Said in oltplab.log when a search stops for its budget (a suite sums these lines).
BUDGET_SPENT = "budget spent:"


def _told(results: Path, line: str) -> None:
    """A line of the search's in the results' oltplab.log, which run() writes only while
    it runs."""
    handler = log_to(results)
    try:
        log.info("%s", line)
    finally:
        log.removeHandler(handler)
        handler.close()


def target_of(spec: Spec) -> Target | None:
    protocol = spec.protocol
    if protocol.target_ci_pct is None:
        return None
    return Target(protocol.target_ci_pct, measure_named(precision_measure(spec)), protocol.budget)


def rounds_order(spec: Spec) -> str:
    """How a search runs its rounds: as the spec says when it names interleaved,
    alternating or sliced rounds; otherwise sliced, which paired most tightly for the same
    machine time here (docs/explanation/statistics.md has bench/precision.py's figures)."""
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


class TimeSpent:
    """A search's time: the wall time its processes were alive, each from its start, summed
    over resumes (the time a killed run lay dead is not counted).

    Kept in the results' search.json, rewritten every SPENT_EVERY_SECONDS while the search
    holds the results and when it stops unfinished (killed, interrupted, a cell failed, a
    full disk), so that the command run again to resume it goes on from there. A search
    that finishes removes it, and the next starts afresh; one turned away (bad input, or
    another writer there) leaves it as it was.
    """

    def __init__(self, results: Path) -> None:
        self._results = results
        self._path = ResultsDir(results).search
        self.before = _spent_before(self._path)
        self._started = time.monotonic() - _alive_seconds()
        self._held = False  # whether it has written the time down, holding the results
        self._finished = False
        self._stop = threading.Event()
        self._writer = threading.Thread(target=self._keep, name="time spent", daemon=True)

    def seconds(self) -> float:
        return self.before + time.monotonic() - self._started

    def finished(self) -> None:
        self._finished = True

    def _write(self, seconds: float) -> None:
        # A full disk loses a few seconds of it at most; the run itself stops on it.
        with contextlib.suppress(OltplabError):
            write_atomic(self._path, json.dumps({"spent_seconds": round(seconds, 1)}) + "\n")

    def _keep(self) -> None:
        while not self._stop.wait(SPENT_EVERY_SECONDS):
            if holder(self._results) == os.getpid():
                self._held = True
                self._write(self.seconds())

    def __enter__(self) -> TimeSpent:
        self._writer.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._writer.join()
        if self._finished:
            self._path.unlink(missing_ok=True)
        elif not self._held:
            return  # never wrote here: turned away before, or a writer moments long
        elif isinstance(exc, OltplabError) and exc.exit_code == EXIT_BAD_INPUT:
            if self.before:  # the input was refused: the time goes back as it was
                self._write(self.before)
            else:
                self._path.unlink(missing_ok=True)
        else:
            self._write(self.seconds())


def _alive_seconds() -> float:
    """How long this process has been alive: its start (field 22 of /proc/self/stat, in
    clock ticks after boot) counts the interpreter's start-up, seconds on a busy host."""
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))


def _spent_before(path: Path) -> float:
    """The seconds an unfinished search in these results spent (0 with none)."""
    try:
        said = load_json(path.read_text())
    except (FileNotFoundError, NotADirectoryError):  # no folder yet, or a file: run() says so
        return 0.0
    except OSError as exc:
        raise os_problem(exc, path) from None
    except ValueError:
        said = None
    spent = said.get("spent_seconds") if isinstance(said, dict) else None
    if isinstance(spent, bool) or not isinstance(spent, int | float) or not 0 <= spent < 1e9:
        raise OltplabError(
            f'{path}: expected {{"spent_seconds": N}}, the seconds an unfinished --margin '
            "search spent; remove the file to start its budget afresh"
        )
    return float(spent)


@dataclass
class Search:
    outcome: Outcome
    answers: list[Answer] = field(default_factory=list)
    rounds: int = 0
    stopped: str = ""  # why no more rounds were added


def measure_until_answered(request: RunRequest, display: Display) -> Search:
    """Rounds until every comparison is decided or the budget is spent."""
    with TimeSpent(request.results) as spent:
        return _search(request, display, spent)


def _search(request: RunRequest, display: Display, spent: TimeSpent) -> Search:
    spec, results = request.spec, request.results
    target = target_of(spec)
    assert target is not None, "the spec sets protocol.target_ci_pct"
    budget = target.budget_seconds
    if budget is not None and spent.before:
        display.note(
            f"resuming: {spent.before:.0f} s of the {duration_text(budget)} budget spent, "
            f"{max(0.0, budget - spent.before):.0f} s left"
        )
    rounds = max(spec.protocol.repetitions, MIN_ROUNDS)
    # Alternating engines restart for each batch of rounds added: a batch as long as the
    # first keeps restarts and warm-ups a small part of the time.
    step = rounds if rounds_order(spec) in KEPT_RUNNING else 1
    while True:
        # The measure as resolved (a kind's own when the spec names none) goes with the
        # results, for the report to judge on the same.
        current, text = with_rounds(spec, rounds, precision_measure=target.measure.name)
        outcome = run(replace(request, spec=current, spec_text=text), display)
        search = Search(outcome, rounds=rounds)
        if outcome.interrupted or outcome.failed:
            search.stopped = "interrupted" if outcome.interrupted else "a cell failed"
            return search
        search.answers = answers(Points(load([results]), measure=target.measure), target)
        undecided = [a for a in search.answers if a.verdict == UNKNOWN]
        elapsed = spent.seconds()
        decided = len(search.answers) - len(undecided)
        _told(results, f"precision: {decided} of {len(search.answers)} comparisons decided "
              f"after {rounds} rounds ({elapsed:.0f} s)")  # fmt: skip
        if not undecided:
            search.stopped = "every comparison decided"
            spent.finished()
            return search
        # No round is added that would end after the budget, a batch's last one included.
        per_round = elapsed / rounds
        fit = step if budget is None else min(step, math.floor((budget - elapsed) / per_round))
        if budget is not None and fit < 1:
            search.stopped = f"the budget ran out ({duration_text(budget)})"
            _told(results, f"precision: {BUDGET_SPENT} {elapsed:.1f} s of {budget:.0f} s")
            spent.finished()
            return search
        display.note(
            f"{len(undecided)} comparison(s) undecided after {rounds} rounds; "
            + ("one more round" if fit == 1 else f"{fit} more rounds")
        )
        rounds += fit
