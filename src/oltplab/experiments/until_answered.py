"""Measure until the question is answered: paired rounds are added to a run until every
comparison is DIFFERENT or SAME against the margin (`analysis/precision`), or the budget is
spent, when the undecided ones end UNKNOWN.

The rounds are sliced (the engines kept running, a round's cells at once in short time
slots) and isolated unless the spec asks otherwise. The search is one run: its round policy
(UntilAnswered) adds batches of rounds to it, on the engines its first batch started, as
many rounds a batch as the first when sliced or alternating (the looks the power curve
replays). Each batch's cells are the spec's with more repetitions, in the same results
directory, so a killed search resumes like any run and every round is kept. The budget is
for the whole search across resumes: see TimeSpent.
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
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import Any

from oltplab.analysis.dataset import load
from oltplab.analysis.points import Points
from oltplab.analysis.precision import MIN_ROUNDS, UNKNOWN, Answer, answers
from oltplab.base.asking import results_option
from oltplab.base.errors import EXIT_BAD_INPUT, OltplabError
from oltplab.base.metrics import Target, measure_named
from oltplab.base.nesting import load_json
from oltplab.base.sizes import duration_text
from oltplab.base.telling import Rows, Said, Told
from oltplab.measure.request import Display, RunRequest
from oltplab.measure.rounds import more_repetitions
from oltplab.measure.run import Round, Run
from oltplab.measure.runner import RunOutcome, run
from oltplab.plan import KEPT_RUNNING
from oltplab.spec import Spec, derived_spec, parse_spec
from oltplab.store.directory import ResultsDir
from oltplab.store.files import os_problem, write_atomic
from oltplab.store.lock import holder
from oltplab.store.status import Status
from oltplab.workloads.kinds import precision_measure

log = logging.getLogger("oltplab")
# How often a search writes down its time spent: a kill loses at most this much of it.
SPENT_EVERY_SECONDS = 2.0


# Said in oltplab.log when a search stops for its budget (a suite sums these lines).
BUDGET_SPENT = "budget spent:"


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
    outcome: RunOutcome
    answers: list[Answer] = field(default_factory=list)
    rounds: int = 0
    stopped: str = ""  # why no more rounds were added

    def rows(self) -> Rows:
        """Each comparison's verdict, its 90% interval and the smallest difference it could
        have told apart."""
        measure = self.answers[0].measure.label if self.answers else ""
        columns = ("comparison", "difference [90% interval]", "verdict", "could detect")
        rows = tuple(
            (
                answer.label,
                f"{c.diff_pct:+.1f}% {c.interval()}" if (c := answer.comparison) else "-",
                answer.verdict,
                "-" if (least := answer.detectable_pct) is None else f"±{least:.1f}%",
            )
            for answer in self.answers
        )
        title = f"Comparisons on {measure} after {self.rounds} rounds: {self.stopped}"
        return Rows(title, columns, rows, right=columns[1:])

    def said(self) -> tuple[Said, ...]:
        """The table, then each verdict in words; nothing when no comparison was judged."""
        if not self.answers:
            return ()
        return (self.rows(), *(answer.describe() for answer in self.answers))


def measure_until_answered(request: RunRequest, display: Display) -> Search:
    """Rounds until every comparison is decided or the budget is spent: one run, its
    engines started once, to which the search adds batches of rounds (UntilAnswered)."""
    with TimeSpent(request.results) as spent:
        target = target_of(request.spec)
        assert target is not None, "the spec sets protocol.target_ci_pct"
        budget = target.budget_seconds
        if budget is not None and spent.before:
            display.note(
                f"resuming: {spent.before:.0f} s of the {duration_text(budget)} budget spent, "
                f"{max(0.0, budget - spent.before):.0f} s left"
            )
        search = UntilAnswered(request.spec, target, spent)
        first, text = search.spec_of(search.rounds)
        outcome = run(replace(request, spec=first, spec_text=text), display, [search])
        stopped = "interrupted" if outcome.interrupted else search.stopped
        return Search(outcome, search.answers, search.rounds, stopped)


# The demo's comparison is decided within this margin, in a minute at most.
DEMO_MARGIN_PCT = 5.0


@dataclass(frozen=True, kw_only=True)
class DemoAsked:
    results: Path = results_option("Results directory.", Path("runs/demo"))

    def request(self) -> RunRequest:
        """The demo's matrix: the built-in spec, MySQL 8.0.31 and MariaDB 10.11.5."""
        text = resources.files("oltplab").joinpath("spec/demo.toml").read_text()
        return RunRequest(parse_spec(text, "demo spec"), text, "demo spec", self.results)

    @property
    def deciding(self) -> Path:
        """Where one of its comparisons is measured until it is decided."""
        return self.results.with_name(f"{self.results.name}-decide")

    def decide(self, spec: Spec, display: Display) -> Search:
        """The demo's one comparison that concludes (read-only at 4 threads): a single
        plain run of each engine cannot say whether a difference is real, a minute of
        paired rounds here usually can. Once answered, its spec is kept beside its results
        for a longer search."""
        data = spec.model_dump(mode="json", exclude_none=True)
        data["workloads"] = [w for w in data["workloads"] if w["name"] == "oltp_read_only"]
        data["protocol"].update(threads=[4], target_ci_pct=DEMO_MARGIN_PCT, budget_minutes=1)
        decide, text = derived_spec(data, "demo decision")
        request = RunRequest(decide, text, "demo decision", self.deciding)
        search = measure_until_answered(request, display)
        if search.answers:
            write_atomic(ResultsDir(self.deciding).derived_spec, text)
        return search

    def before_deciding(self) -> Told:
        return Told(
            (
                "Deciding one comparison: paired rounds until it is DIFFERENT or SAME within "
                f"±{DEMO_MARGIN_PCT:g}%, for a minute at most (into {self.deciding})",
            )
        )

    def decided(self, search: Search) -> Told:
        """Its verdict; when undecided, how to search longer."""
        results = self.deciding
        said: list[Said] = [search.rows()]
        for answer in search.answers:
            said.append(answer.describe())
            if answer.verdict == UNKNOWN:
                longer = results.with_name(f"{results.name}-longer")
                said.append(
                    f"this host's rounds spread more than a minute can narrow to "
                    f"±{DEMO_MARGIN_PCT:g}%; `oltplab run {ResultsDir(results).derived_spec} "
                    f"--margin {DEMO_MARGIN_PCT:g}% --budget 10m -r {longer}` gives the same "
                    "search longer"
                )
        return Told(tuple(said), f"oltplab report {results}")


class UntilAnswered:
    """The round policy of a search: after each batch of rounds, the comparisons judged
    against the margin; another batch while some are undecided and the budget holds it,
    as long as the first batch (sliced and alternating rounds) or one round, so that the
    looks at the data are the ones the power curve replays (analysis/power.py)."""

    def __init__(self, spec: Spec, target: Target, spent: TimeSpent) -> None:
        self.spec, self.target, self.spent = spec, target, spent
        self.rounds = max(spec.protocol.repetitions, MIN_ROUNDS)
        self.step = self.rounds if rounds_order(spec) in KEPT_RUNNING else 1
        self.answers: list[Answer] = []
        self.stopped = ""  # why no more rounds were added

    def spec_of(self, rounds: int) -> tuple[Spec, str]:
        # The measure as resolved (a kind's own when the spec names none) goes with the
        # results, for the report to judge on the same.
        return with_rounds(self.spec, rounds, precision_measure=self.target.measure.name)

    def next_round(self, open_run: Run) -> Round | None:
        if any(row.status == Status.FAILED for row in open_run.ledger.cells()):
            self.stopped = "a cell failed"
            return None
        fit = self._rounds_to_add(open_run.results)
        if fit == 0:
            return None
        open_run.display.note(
            f"{sum(a.verdict == UNKNOWN for a in self.answers)} comparison(s) undecided "
            f"after {self.rounds} rounds; "
            + ("one more round" if fit == 1 else f"{fit} more rounds")
        )
        before, self.rounds = self.rounds, self.rounds + fit
        current, text = self.spec_of(self.rounds)
        return more_repetitions(open_run, current, text, before)

    def _rounds_to_add(self, results: Path) -> int:
        """How many rounds the next batch has: 0 once every comparison is decided or no
        round fits in the budget (a batch's last one included)."""
        self.answers = answers(Points(load([results]), measure=self.target.measure), self.target)
        undecided = sum(a.verdict == UNKNOWN for a in self.answers)
        elapsed = self.spent.seconds()
        log.info(
            "precision: %d of %d comparisons decided after %d rounds (%.0f s)",
            len(self.answers) - undecided, len(self.answers), self.rounds, elapsed,
        )  # fmt: skip
        if not undecided:
            self.stopped = "every comparison decided"
            self.spent.finished()
            return 0
        budget = self.target.budget_seconds
        if budget is None:
            return self.step
        fit = min(self.step, math.floor((budget - elapsed) / (elapsed / self.rounds)))
        if fit < 1:
            self.stopped = f"the budget ran out ({duration_text(budget)})"
            log.info("precision: %s %.1f s of %.0f s", BUDGET_SPENT, elapsed, budget)
            self.spent.finished()
            return 0
        return fit
