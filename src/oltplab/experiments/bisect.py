"""Which release first changed a cell: a bisection over an ordered list of releases, each
step measured in paired rounds as a precision search measures them (sliced and isolated
unless the spec names another order), rounds added until its interval decides or the
budget would be spent.

The endpoints are measured first; if the last release is within +-threshold of the first
(two one-sided tests on the 90% interval), there is nothing to find. Otherwise each step
measures the middle release of what is left against the nearer release already known,
round by round (A B, B A, A B, ...), judged from the third round on until the middle one's
interval lies wholly on one side of halfway between the two ends (it is like that end), or
the rounds or the budget run out: then its point places it, and the step says it was
undecided. Ends that stay undecided say how many rounds, and how much time, would decide.
Every step is a results directory of its own; a shared snapshot store (the bisection's, or
the one OLTPLAB_SNAPSHOTS names for every run on the machine) prepares each release's
dataset once.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from oltplab.analysis.bisection import (
    Bisection,
    CellChoice,
    Placement,
    Step,
    counterpart_pct,
    place,
)
from oltplab.analysis.dataset import load
from oltplab.analysis.equivalence import (
    DIFFERENT,
    EQUIVALENT,
    TOST_CONFIDENCE,
    UNDECIDED,
    Equivalence,
    judge,
)
from oltplab.analysis.estimate import Comparison, compare
from oltplab.analysis.points import Points
from oltplab.analysis.sessions import widened
from oltplab.base.asking import margin_option, measure_option, option, required, results_option
from oltplab.base.errors import EXIT_UNDECIDED, OltplabError
from oltplab.base.given import margin_pct, measure_of, parse_duration
from oltplab.base.metrics import TPS, Measure
from oltplab.base.telling import Told
from oltplab.experiments.session_spread import StoredSpread, spread_here
from oltplab.experiments.until_answered import rounds_order, with_rounds
from oltplab.measure.request import Display, RunRequest
from oltplab.measure.rounds import more_repetitions
from oltplab.measure.run import Round, Run
from oltplab.measure.runner import run
from oltplab.plan import KEPT_RUNNING, Scenario
from oltplab.spec import Spec, derived_spec, load_spec, parse_spec
from oltplab.spec.catalog import CATALOG, family_releases
from oltplab.spec.sources import EngineSpec
from oltplab.store.directory import BISECT_MD, FLAMEGRAPH, STEPS, ResultsDir
from oltplab.store.files import write_atomic
from oltplab.store.scratch import snapshot_store
from oltplab.store.status import Status
from oltplab.telemetry.registry import PROFILE, default_names

log = logging.getLogger("oltplab")

# Without a spec of the user's: a small dataset and short cells, as on a laptop.
DEFAULT_SPEC = """
name = "bisect"
workloads = ["oltp_read_only"]
engines = [{{name = "{good}"}}, {{name = "{bad}"}}]
[config]
buffer_pool = "128M"
[dataset]
tables = 4
table_size = 10000
[protocol]
warmup_ro_seconds = 10
warmup_rw_seconds = 10
warmup_threads = 2
measure_seconds = 20
threads = [1]
"""
# Two rounds give a 90% interval with one degree of freedom: two ratios that happen to agree
# make it narrow by luck (seen here: identical releases "changed +20%" after two rounds).
MIN_ROUNDS = 3


def releases_between(good: str, bad: str, spec: Spec | None) -> list[str]:
    """The releases from good to bad: the spec's engines in its order, else the catalog's
    releases of their family in release order."""
    if spec is not None and {good, bad} <= {e.name for e in spec.engines}:
        names = [e.name for e in spec.engines]
    else:
        for name in (good, bad):
            if name not in CATALOG:
                raise OltplabError(
                    f"{name}: not in the catalog (oltplab engines list); to bisect your own "
                    "builds, list them in order as the engines of a --spec"
                )
        if CATALOG[good].family != CATALOG[bad].family:
            raise OltplabError(f"--good {good} and --bad {bad} are of different families")
        names = [e.name for e in family_releases(CATALOG[good].family)]
    if good not in names or bad not in names:
        raise OltplabError(f"{good} and {bad} must both be releases of one ordered series")
    first, last = names.index(good), names.index(bad)
    if last <= first:
        raise OltplabError(f"--good {good} must come before --bad {bad} in release order")
    return names[first : last + 1]


@dataclass(frozen=True)
class BisectSubject:
    """What a bisection measures: the spec, its releases in order and the cell."""

    spec: Spec
    releases: list[str]
    cell: CellChoice


def bisect_subject(good: str, bad: str, spec_path: Path | None, cell: str | None) -> BisectSubject:
    """The user's spec, or without one a small default of the two releases; the releases
    from good to bad and the cell chosen (the spec's first when none is named)."""
    spec = (
        load_spec(spec_path)
        if spec_path
        else parse_spec(DEFAULT_SPEC.format(good=good, bad=bad), "the bisect default")
    )
    releases = releases_between(good, bad, spec if spec_path else None)
    return BisectSubject(spec, releases, CellChoice.parse(cell, spec))


@dataclass(frozen=True, kw_only=True)
class BisectAsked:
    good: str = required("A release that is as it should be.")
    bad: str = required("A later release that changed.")
    spec_path: Path | None = option(
        None,
        "Releases in order as its engines (your own tarballs or basedirs, say), and the "
        "dataset and protocol to measure with; without one, the catalog's releases between "
        "--good and --bad, on a small dataset.",
        "--spec",
    )
    cell: str | None = option(None, 'The cell to follow: "[SCENARIO] TIER WORKLOAD <N>t".')
    margin: str | None = margin_option(
        "a release within ±PCT of the other is the same; default: margin_pct of the spec's "
        "compare section, 5."
    )
    results: Path | None = results_option("Default: runs/bisect-GOOD-BAD.", None)
    max_repetitions: int = option(
        20, "Rounds per step at most (3 at least), before it is undecided.", min=3, max=100
    )
    budget: str = option(
        "30m",
        "Add no round that would end the bisection after this much time (90s, 30m, 2h); "
        "undecided ends then say the rounds and the budget that would decide.",
        metavar="TIME",
    )
    explain: bool = option(
        True, "Profile the two releases around the change and explain it.", "--explain/--no-explain"
    )
    measure: str = measure_option()


@dataclass(frozen=True)
class BisectQuestion:
    """Where between two releases a cell's measure changed by more than a threshold."""

    releases: list[str]  # in order, from the good one to the bad one
    cell: CellChoice
    threshold_pct: float
    max_repetitions: int
    measure: Measure = TPS
    budget_seconds: float = math.inf
    # Each step compares two builds, each started afresh: a session's own offset is in
    # every such difference, so its interval is widened by this host's spread.
    session_spread: StoredSpread | None = None


class Bisector:
    def __init__(
        self, base: Spec, question: BisectQuestion, results: Path, display: Display
    ) -> None:
        self.base = base
        self.cell = question.cell
        self.threshold = question.threshold_pct
        self.results = results
        self.display = display
        self.max_repetitions = question.max_repetitions
        self.compared_on = question.measure
        self.budget_seconds = question.budget_seconds
        self.started = time.monotonic()
        self.session_spread = question.session_spread
        described = self.session_spread.describe() if self.session_spread else None
        self.found = Bisection(
            question.releases, self.cell, self.threshold, [], session_spread=described
        )
        self.round_seconds = 0.0

    def _engine(self, name: str) -> dict[str, Any]:
        known = {e.name: e for e in self.base.engines}
        engine = known.get(name) or EngineSpec(name=name)
        return engine.model_dump(mode="json", exclude_none=True)

    def spec_for(self, names: list[str], repetitions: int) -> tuple[Spec, str]:
        """The base spec cut to the cell, for these releases, in a precision search's
        rounds."""
        data = self.base.model_dump(mode="json", exclude_none=True, exclude={"distribute"})
        data["engines"] = [self._engine(n) for n in names]
        if data["tiers"]:
            data["tiers"] = [t for t in data["tiers"] if t["name"] == self.cell.tier]
        data["workloads"] = [w for w in data["workloads"] if w["name"] == self.cell.workload]
        data["placements"] = data["placements"][:1]
        if not data["workloads"] or (self.base.tiers and not data["tiers"]):
            raise OltplabError(
                f"--cell: tier {self.cell.tier} and workload {self.cell.workload} must be the "
                "spec's own"
            )
        data["protocol"].update(threads=[self.cell.threads])
        # Isolated unless the user's spec set it: a dumped default would read as set.
        data["protocol"]["isolation"] = self.base.protocol.isolated_unless_said()
        return with_rounds(derived_spec(data, "bisect step")[0], repetitions)

    def measure(
        self, known: str, other: str, decide: Callable[[Comparison], Equivalence | Placement]
    ) -> Step:
        """`other` against `known`: one run, its rounds added batch by batch (StepRounds)
        until `decide` is not undecided."""
        number = len(self.found.steps)
        folder = ResultsDir(self.results).step(number, known, other)
        rounds = StepRounds(self, (known, other), decide, folder)
        spec, text = self.spec_for([known, other], rounds.repetitions)
        request = RunRequest(spec, text, f"bisect step {number}", folder, snapshots=self.snapshots)
        outcome = run(request, self.display, [rounds])
        if outcome.interrupted:
            raise KeyboardInterrupt
        if outcome.failed or rounds.judged is None or rounds.within is None:
            reason = outcome.failed[0].reason if outcome.failed else "no round measured"
            raise OltplabError(f"bisect step {number} ({known} vs {other}): {reason}")
        repetitions, judged, within = rounds.repetitions, rounds.judged, rounds.within
        spread = self.session_spread
        step = Step(number, known, other, repetitions, judged, folder, within if spread else None)
        self.found.steps.append(step)
        said = judged.describe() + (
            f" (within the run: {within.with_interval()})" if spread else ""
        )
        self.display.note(f"step {number}: {other} against {known}: {said}")
        log.info("bisect step %d: %s against %s: %s", number, other, known, said)
        return step

    def search(self) -> Bisection:
        names, found = self.found.releases, self.found
        ends = self.measure(names[0], names[-1], lambda c: judge(c, self.threshold))
        if ends.judged.verdict != DIFFERENT:
            found.verdict = (
                f"no change beyond ±{self.threshold:g}% from {names[0]} to {names[-1]}"
                if ends.judged.verdict == EQUIVALENT
                else f"UNKNOWN from {names[0]} to {names[-1]}: {ends.judged.describe()}"
                + self._would_decide(ends)
            )
            found.decided = ends.judged.verdict == EQUIVALENT
            return self._saved()
        bad_against_good = ends.judged.comparison.diff_pct
        good_against_bad = counterpart_pct(bad_against_good)
        low, high = 0, len(names) - 1
        while high - low > 1:
            middle = (low + high) // 2
            near = low if middle - low <= high - middle else high
            other_end = bad_against_good if near == low else good_against_bad
            step = self.measure(names[near], names[middle], partial(place, other_end_pct=other_end))
            assert isinstance(step.judged, Placement)
            if (near == low) == step.judged.like_known:
                low = middle
            else:
                high = middle
        found.last_good, found.first_changed = names[low], names[high]
        found.verdict = f"{names[high]} is the first release that changed (after {names[low]})"
        # A middle step still undecided after its last round was placed by its point: the
        # answer leans on it, and is said to, not given as decided.
        if leaned := [s for s in found.steps if s.leaning]:
            found.decided = False
            found.verdict += (
                "; undecided, leaning on "
                + "; ".join(
                    f"{s.measured} against {s.known}: {s.judged.describe()}" for s in leaned
                )
                + f" (more rounds decide it: --max-repetitions above {leaned[0].repetitions})"
            )
        return self._saved()

    def spent(self) -> float:
        return time.monotonic() - self.started

    @property
    def snapshots(self) -> Path:
        """Where the steps take each release's prepared dataset from: the store every run
        on this machine shares when OLTPLAB_SNAPSHOTS names one, else the bisection's own."""
        return snapshot_store(None) or ResultsDir(self.results).snapshots

    def _would_decide(self, step: Step) -> str:
        """What undecided ends would need: the rounds their interval asks for, at the time
        a round took here, as the options that allow it."""
        assert isinstance(step.judged, Equivalence)
        needed = step.judged.needed
        if needed is None:
            return ""
        more = (needed - step.repetitions) * self.round_seconds
        minutes = math.ceil((self.spent() + more) / 60)
        return (
            f"; about {needed} rounds would decide, {minutes} min in all at "
            f"{self.round_seconds:.0f} s a round: --max-repetitions {needed} --budget {minutes}m"
        )

    def _saved(self) -> Bisection:
        write_atomic(
            ResultsDir(self.results).bisect_json, json.dumps(self.found.as_json(), indent=2) + "\n"
        )
        return self.found


class StepRounds:
    """A bisect step's round policy: after each batch, the step's comparison judged; another
    batch while it is undecided and the most rounds and the budget allow, on the engines the
    first batch started. A batch is as long as the first when rounds are kept running (the
    search's looks), else one round."""

    def __init__(
        self,
        bisector: Bisector,
        pair: tuple[str, str],
        decide: Callable[[Comparison], Equivalence | Placement],
        folder: Path,
    ) -> None:
        self.bisector, self.pair, self.decide, self.folder = bisector, pair, decide, folder
        self.repetitions = MIN_ROUNDS
        self.batch = MIN_ROUNDS if rounds_order(bisector.base) in KEPT_RUNNING else 1
        self.began = time.monotonic()
        self.within: Comparison | None = None
        self.judged: Equivalence | Placement | None = None

    def next_round(self, open_run: Run) -> Round | None:
        bisector, (known, other) = self.bisector, self.pair
        if any(row.status == Status.FAILED for row in open_run.ledger.cells()):
            return None
        cell = bisector.cell
        workload = Scenario(cell.workload).name
        samples = Points(load([self.folder]), measure=bisector.compared_on).samples()
        self.within = compare(
            samples[(workload, cell.tier, other, cell.threads)],
            samples[(workload, cell.tier, known, cell.threads)],
            paired=True,
            label=f"{known}|{other}",
            confidence=TOST_CONFIDENCE,
        )
        spread = bisector.session_spread
        self.judged = self.decide(
            widened(self.within, spread.spread_pct) if spread else self.within
        )
        bisector.round_seconds = (time.monotonic() - self.began) / self.repetitions
        more = min(self.repetitions + self.batch, bisector.max_repetitions)
        if self.judged.verdict != UNDECIDED or more <= self.repetitions:
            return None
        if (
            bisector.spent() + (more - self.repetitions) * bisector.round_seconds
            > bisector.budget_seconds
        ):
            return None
        spec, text = bisector.spec_for([known, other], more)
        before, self.repetitions = self.repetitions, more
        return more_repetitions(open_run, spec, text, before)


def explain_change(bisector: Bisector, before: str, after: str) -> tuple[Path, Any]:
    """One more round of the two releases with the server profiled on-CPU: the folder, and
    what differs between them (settings, per-transaction costs, functions)."""
    from oltplab.analysis.explain import explain
    from oltplab.analysis.model import AnalysisOptions, analyse

    folder = ResultsDir(bisector.results).explain
    spec, text = bisector.spec_for([before, after], 1)
    profiled = RunRequest(
        spec, text, "bisect explanation", folder, snapshots=bisector.snapshots,
        telemetry=(*default_names(), PROFILE),
    )  # fmt: skip
    outcome = run(profiled, bisector.display)
    if outcome.failed:
        raise OltplabError(f"bisect explanation: {outcome.failed[0].reason}")
    analysis = analyse(load([folder]), AnalysisOptions())
    return folder, explain(analysis.dataset, analysis.operations, before, after)


def spread_allowed(spread: StoredSpread | None) -> str:
    """What each step's interval allows for on this host, said before the steps begin."""
    if spread:
        return (
            f"Between-session spread on this host: {spread.describe()}; each step's interval "
            "is widened by it."
        )
    return (
        "No between-session spread stored for this host (`oltplab reproduced S1 S2 S3` over "
        "sessions of one A/B measures it): each step's interval allows for the within-run "
        "noise only."
    )


@dataclass(frozen=True)
class BisectWritten:
    """A bisection done: what it found, its report and the flame graph (when the two
    releases around the change were profiled)."""

    found: Bisection
    report: Path
    flamegraph: Path | None


def bisect_and_explain(
    spec: Spec, question: BisectQuestion, folder: Path, display: Display, *, explain: bool
) -> BisectWritten:
    """The bisection measured into `folder`, the change explained when asked and found,
    and the report (bisect.md) written beside its steps."""
    # Here, not at the top: the report package loads Matplotlib, and this module is
    # imported as the command line starts (BisectAsked).
    from oltplab.report.explained import bisect_markdown
    from oltplab.report.flamegraph import page

    bisector = Bisector(spec, question, folder.resolve(), display)
    found = bisector.search()
    explanation, flamegraph = None, None
    if explain and found.first_changed and found.last_good:
        _, explanation = explain_change(bisector, found.last_good, found.first_changed)
        if explanation.before_profile and explanation.after_profile:
            flamegraph = folder / FLAMEGRAPH
            write_atomic(
                flamegraph,
                page(explanation.before_profile, explanation.after_profile, explanation.functions),
            )
    report = folder / BISECT_MD
    write_atomic(report, bisect_markdown(found, explanation, flamegraph))
    return BisectWritten(found, report, flamegraph)


def bisected(asked: BisectAsked, display: Display, say: Callable[[str], None]) -> Told:
    """The bisection asked for, measured and explained: its verdict, its report and where
    its steps are; undecided ends exit 5. What this host's between-session spread allows
    for is said (`say`) before the steps begin."""
    subject = bisect_subject(asked.good, asked.bad, asked.spec_path, asked.cell)
    folder = asked.results or Path("runs") / f"bisect-{asked.good}-{asked.bad}"
    threshold = margin_pct(asked.margin, subject.spec.compare.margin_pct)
    budget_seconds = parse_duration(asked.budget, "--budget")
    measure = measure_of(asked.measure)
    spread = spread_here()
    say(spread_allowed(spread))
    question = BisectQuestion(
        subject.releases, subject.cell, threshold, asked.max_repetitions, measure,
        budget_seconds, spread,
    )  # fmt: skip
    done = bisect_and_explain(subject.spec, question, folder, display, explain=asked.explain)
    beside = (
        f" (allowing for a between-session spread of {spread.spread_pct:.2f}%)" if spread else ""
    )
    return Told(
        (
            f"verdict: {done.found.verdict}{beside}",
            str(done.report),
            *([str(done.flamegraph)] if done.flamegraph else []),
        ),
        f"read {done.report}; every step's results are in {folder / STEPS}",
        0 if done.found.decided else EXIT_UNDECIDED,
    )
