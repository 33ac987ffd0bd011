"""How often the decision rule is right, from real trials: a power curve and a
false-DIFFERENT rate, measured on this host by bench/power.py.

A trial is one real search (`oltplab run --margin 1%`): a base workload, an A/A twin of it,
and one with a planted difference, each compared with the base round by round. The rule
is replayed on each comparison's rounds at the looks the search itself took (after each
batch of rounds) for other margins too: the first look that decides is the trial's verdict
and its cost, as a search of that comparison alone would have stopped there. A margin the
search's rounds did not decide is UNKNOWN; when the search stopped before its budget (its
own margin was decided first) it is counted apart as `cut short`, since more rounds might
have decided it.

Every share comes with its exact (Clopper-Pearson) 95% interval, from the same trials.
"""

from __future__ import annotations

import gzip
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from oltplab.analysis.estimate import PointSample
from oltplab.analysis.precision import DIFFERENT, SAME, UNKNOWN, decide
from oltplab.base.errors import OltplabError

# The trials measured on the project's own machine, kept with the package: `oltplab plan`
# reads them where its host is theirs, and the docs draw them.
PACKED = Path(__file__).parents[1] / "plan" / "power_trials.json.gz"
MARGINS = (0.5, 1.0, 3.0)
BASE = "base"


class Trial(BaseModel):
    """One trial as bench/power.py recorded it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    trial: int
    planted_pct: float
    planted_per_100: int
    started_at: datetime
    wall_minutes: float
    exit_status: int
    waited_for_quiet_minutes: float
    load_before: float
    margin_pct: float
    budget_minutes: float
    look_every: int
    engine: str
    cell_seconds: int
    threads: int
    host: dict[str, str | int | None]
    measure: str
    round_end_minutes: list[float]
    workloads: dict[str, list[float | None]]
    points: dict[str, str]
    flagged_rounds: dict[str, list[int]]
    # The commit whose oltplab measured the trial (not recorded by the first six).
    oltplab_commit: str | None = None

    @property
    def rounds(self) -> int:
        return len(self.round_end_minutes)

    @property
    def stopped_early(self) -> bool:
        """Whether its search stopped with budget left (every comparison decided)."""
        return self.wall_minutes < self.budget_minutes * 0.95

    def planted_of(self, workload: str) -> float:
        return 0.0 if workload == "aa" else self.planted_pct


@dataclass(frozen=True)
class Decision:
    planted_pct: float  # 0: an A/A pair
    verdict: str
    rounds: int  # at the look that decided it; all the rounds measured when UNKNOWN
    minutes: float  # machine time from the trial's start to that look
    estimate_pct: float  # the difference measured over all the trial's rounds
    cut_short: bool = False  # UNKNOWN only: the search stopped before its budget


def decisions(trial: Trial, margin_pct: float) -> list[Decision]:
    """Each comparison of the trial with the base, judged as a search at this margin would
    have judged it at the looks the trial's search took."""
    found = []
    base = trial.workloads[BASE]
    for workload, values in trial.workloads.items():
        if workload == BASE:
            continue
        paired = [r for r in range(trial.rounds) if values[r] is not None and base[r] is not None]
        label = f"{trial.points[workload]}|{trial.points[BASE]}"
        looks = [k for k in range(1, len(paired) + 1) if k % trial.look_every == 0]
        if paired and (not looks or looks[-1] != len(paired)):
            looks.append(len(paired))
        decided = None
        for k in looks:
            a = _sample(values, paired[:k])
            b = _sample(base, paired[:k])
            _, verdict = decide(a, b, margin_pct, paired=True, label=label)
            if verdict != UNKNOWN:
                decided = (verdict, k)
                break
        whole = _sample(values, paired), _sample(base, paired)
        estimate = (whole[0].mean / whole[1].mean - 1) * 100 if paired else math.nan
        verdict, k = decided or (UNKNOWN, len(paired))
        minutes = trial.round_end_minutes[paired[k - 1]] if k else trial.wall_minutes
        found.append(
            Decision(
                trial.planted_of(workload),
                verdict,
                k,
                minutes,
                estimate,
                cut_short=decided is None and trial.stopped_early,
            )
        )
    return found


def _sample(values: Sequence[float | None], rounds: Sequence[int]) -> PointSample:
    return PointSample({r + 1: np.array([values[r]]) for r in rounds})


@dataclass(frozen=True)
class CurvePoint:
    margin_pct: float
    planted_pct: float  # 0: A/A pairs
    trials: int
    different: int
    same: int
    unknown: int
    cut_short: int  # of the UNKNOWN: the search stopped before its budget
    measured_pct: float  # the median measured difference over the trials
    median_rounds: float | None  # to a decision, over the decided trials
    median_minutes: float | None
    most_minutes: float | None

    @property
    def share_different(self) -> float:
        return self.different / self.trials

    @property
    def different_interval(self) -> tuple[float, float]:
        """The exact two-sided 95% interval of the share DIFFERENT."""
        return clopper_pearson(self.different, self.trials)

    @property
    def upper_bound_different(self) -> float:
        """The one-sided 95% upper bound of the share DIFFERENT (A/A: the false-call rate)."""
        from scipy import special  # loaded by the first interval, not by every command

        k, n = self.different, self.trials
        return 1.0 if k >= n else float(special.betaincinv(k + 1, n - k, 0.95))


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    from scipy import special  # loaded by the first interval, not by every command

    tail = (1 - confidence) / 2
    low = 0.0 if k == 0 else float(special.betaincinv(k, n - k + 1, tail))
    high = 1.0 if k == n else float(special.betaincinv(k + 1, n - k, 1 - tail))
    return low, high


def curve(trials: Sequence[Trial], margins: Sequence[float] = MARGINS) -> list[CurvePoint]:
    """For each margin and planted size (A/A first): how the trials were decided."""
    points = []
    for margin in margins:
        by_size: dict[float, list[Decision]] = {}
        for trial in trials:
            for decision in decisions(trial, margin):
                by_size.setdefault(decision.planted_pct, []).append(decision)
        for size in sorted(by_size):
            found = by_size[size]
            decided = [d for d in found if d.verdict != UNKNOWN]
            count = {v: sum(d.verdict == v for d in found) for v in (DIFFERENT, SAME, UNKNOWN)}
            points.append(
                CurvePoint(
                    margin,
                    size,
                    len(found),
                    count[DIFFERENT],
                    count[SAME],
                    count[UNKNOWN],
                    sum(d.cut_short for d in found),
                    statistics.median(d.estimate_pct for d in found),
                    statistics.median(d.rounds for d in decided) if decided else None,
                    statistics.median(d.minutes for d in decided) if decided else None,
                    max(d.minutes for d in decided) if decided else None,
                )
            )
    return points


def curve_lines(points: Sequence[CurvePoint]) -> list[str]:
    """The curve as a fixed-width table."""
    lines = [
        f"{'margin':>7} {'planted':>8} {'measured':>9} {'trials':>6} {'DIFFERENT':>9} "
        f"{'95% interval':>14} {'SAME':>5} {'UNKNOWN':>7} {'(cut short)':>11} "
        f"{'rounds':>6} {'minutes':>7} {'most':>5}"
    ]
    for p in points:
        low, high = p.different_interval
        planted = "A/A" if p.planted_pct == 0 else f"{p.planted_pct:g}%"
        rounds = "-" if p.median_rounds is None else f"{p.median_rounds:g}"
        minutes = "-" if p.median_minutes is None else f"{p.median_minutes:.1f}"
        most = "-" if p.most_minutes is None else f"{p.most_minutes:.1f}"
        lines.append(
            f"{p.margin_pct:>6g}% {planted:>8} {p.measured_pct:>+8.2f}% {p.trials:>6} "
            f"{p.different:>9} {f'{low:.0%}-{high:.0%}':>14} {p.same:>5} {p.unknown:>7} "
            f"{p.cut_short:>11} {rounds:>6} {minutes:>7} {most:>5}"
        )
    for p in points:
        if p.planted_pct == 0:
            lines.append(
                f"A/A at ±{p.margin_pct:g}%: {p.different} of {p.trials} DIFFERENT; the "
                f"false-DIFFERENT rate is at most {p.upper_bound_different:.1%} (95% upper bound)"
            )
    return lines


def cost_line(trials: Sequence[Trial]) -> str:
    """What the trials cost: their machine time in all and per trial (their count is
    with their host, in `measured_where`)."""
    minutes = [t.wall_minutes for t in trials]
    if not minutes:
        return "no trials"
    return (
        f"{sum(minutes) / 60:.1f} h of machine time in all "
        f"(median {statistics.median(minutes):.1f} min, longest {max(minutes):.1f} min a trial)"
    )


def print_curve(trials: Sequence[Trial], margins: Sequence[float] = MARGINS) -> None:
    print(
        "\n".join(
            [f"{len(trials)} trials: {cost_line(trials)}", *curve_lines(curve(trials, margins))]
        )
    )


def write_trials(records: Sequence[dict[str, object]], path: Path, measured_on: str) -> None:
    """The trials, checked, into one compressed file (written whole, then moved in)."""
    trials = [Trial.model_validate(r) for r in records]
    packed = {
        "measured_on": measured_on,
        "packed_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "trials": [t.model_dump(mode="json") for t in trials],
    }
    partial = path.with_suffix(".partial")
    with gzip.open(partial, "wt") as out:
        json.dump(packed, out, separators=(",", ":"))
    partial.replace(path)


def read_trials(path: Path) -> list[Trial]:
    try:
        with gzip.open(path, "rt") as source:
            packed = json.load(source)
        return [Trial.model_validate(t) for t in packed["trials"]]
    except (OSError, ValueError, KeyError, TypeError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        raise OltplabError(f"{path}: expected the trials bench/power.py packs ({first})") from None
