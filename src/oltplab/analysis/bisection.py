"""A bisection's findings as data: the cell it follows, each step with its measurements
and verdict, and where it placed the change (oltplab.experiments.bisect does the measuring).

A middle release is asked which end it is like, not whether it is the same as its
neighbour within a margin: once the ends differ by D, the middle one measured against a
known end shows about 0 if it is like that end and about D's counterpart if it is like the
other, so its interval decides as soon as it lies wholly on one side of halfway. That
needs far fewer rounds than a margin test on a noisy host, and a middle release that is
neither (a second, smaller change) still goes to the side it is nearer to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oltplab.analysis.equivalence import UNDECIDED, Equivalence
from oltplab.analysis.estimate import Comparison
from oltplab.base.errors import OltplabError
from oltplab.spec import Spec


@dataclass(frozen=True)
class CellChoice:
    tier: str
    workload: str
    threads: int

    @classmethod
    def parse(cls, text: str | None, spec: Spec) -> CellChoice:
        """`[SCENARIO] TIER WORKLOAD <N>t` (`ro-local 128M oltp_read_only 1t`); left out,
        the spec's first tier, workload and thread count."""
        first = cls(spec.tier_list[0].name, spec.workloads[0].name, spec.protocol.threads[0])
        if not text:
            return first
        words = text.split()
        if words and re.search(r"-(local|network)$", words[0]):
            words = words[1:]
        match = re.fullmatch(r"(\d+)t", words[-1]) if words else None
        if len(words) != 3 or match is None:
            raise OltplabError(
                f'--cell {text!r}: expected "[SCENARIO] TIER WORKLOAD <N>t", e.g. '
                '"ro-local 128M oltp_read_only 1t"'
            )
        return cls(words[0], words[1], int(match[1]))


LIKE_KNOWN = "like the known release"
LIKE_OTHER = "like the other end"


@dataclass(frozen=True)
class Placement:
    """Which end a middle release is like, from its difference to the known end."""

    comparison: Comparison  # the middle release against the known end, 90% interval
    halfway_pct: float  # half of what the other end shows against the known one
    verdict: str  # LIKE_KNOWN, LIKE_OTHER or UNDECIDED

    def describe(self) -> str:
        shown = self.comparison.with_interval()
        if self.verdict == UNDECIDED:
            return f"undecided: the interval spans halfway ({self.halfway_pct:+.1f}%): {shown}"
        return f"{self.verdict}: {shown}, wholly on its side of halfway ({self.halfway_pct:+.1f}%)"

    @property
    def like_known(self) -> bool:
        """Where it goes: by its interval, or (undecided) by its point."""
        if self.verdict != UNDECIDED:
            return self.verdict == LIKE_KNOWN
        diff = self.comparison.diff_pct
        return diff > self.halfway_pct if self.halfway_pct < 0 else diff < self.halfway_pct


def counterpart_pct(diff_pct: float) -> float:
    """b against a, given a against b, both in percent (-20% one way is +25% the other)."""
    return (100 / (1 + diff_pct / 100) - 100) if diff_pct > -100 else float("inf")


def place(comparison: Comparison, other_end_pct: float) -> Placement:
    """The middle release against the known end, where the other end shows other_end_pct."""
    halfway = other_end_pct / 2
    low, high = comparison.low_pct, comparison.high_pct
    verdict = UNDECIDED
    if low is not None and high is not None:
        toward_known = (low > halfway) if halfway < 0 else (high < halfway)
        toward_other = (high < halfway) if halfway < 0 else (low > halfway)
        verdict = LIKE_KNOWN if toward_known else LIKE_OTHER if toward_other else UNDECIDED
    return Placement(comparison, halfway, verdict)


@dataclass(frozen=True)
class Step:
    number: int
    known: str  # the release already placed
    measured: str  # the release it is measured against
    repetitions: int
    judged: Equivalence | Placement  # the ends: within a margin; a middle: which end
    folder: Path
    # The interval within the run, when the judged one was widened by a session spread.
    within: Comparison | None = None

    @property
    def leaning(self) -> bool:
        """A middle release still undecided, placed by where its point lies."""
        return isinstance(self.judged, Placement) and self.judged.verdict == UNDECIDED

    def as_json(self) -> dict[str, Any]:
        c = self.judged.comparison
        return {
            "step": self.number, "known": self.known, "measured": self.measured,
            "repetitions": self.repetitions, "verdict": self.judged.verdict,
            "diff_pct": c.diff_pct, "low_pct": c.low_pct, "high_pct": c.high_pct,
            "said": self.judged.describe(), "results": str(self.folder), "leaning": self.leaning,
            "within_run": self.within.with_interval() if self.within else None,
        }  # fmt: skip


@dataclass
class Bisection:
    releases: list[str]
    cell: CellChoice
    threshold_pct: float
    steps: list[Step]
    last_good: str | None = None
    first_changed: str | None = None
    verdict: str = ""
    decided: bool = True  # False when the ends' interval straddles the margin
    # This host's between-session spread the steps were widened by, described; None: none.
    session_spread: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "releases": self.releases,
            "cell": vars(self.cell),
            "threshold_pct": self.threshold_pct,
            "session_spread": self.session_spread,
            "verdict": self.verdict,
            "last_good": self.last_good,
            "first_changed": self.first_changed,
            "steps": [s.as_json() for s in self.steps],
        }
