"""A bisection's findings as data: the cell it follows, each step with its measurements
and verdict, and where it placed the change (oltplab.bisect does the measuring)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oltplab.analysis.equivalence import Equivalence
from oltplab.errors import OltplabError
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


@dataclass(frozen=True)
class Step:
    number: int
    known: str  # the release already placed
    measured: str  # the release it is measured against
    repetitions: int
    judged: Equivalence
    folder: Path
    leaning: bool = False  # undecided, placed by where its point lies

    def as_json(self) -> dict[str, Any]:
        c = self.judged.comparison
        return {
            "step": self.number, "known": self.known, "measured": self.measured,
            "repetitions": self.repetitions, "verdict": self.judged.verdict,
            "diff_pct": c.diff_pct, "low_pct": c.low_pct, "high_pct": c.high_pct,
            "said": self.judged.describe(), "results": str(self.folder), "leaning": self.leaning,
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

    @property
    def midpoint_steps(self) -> int:
        return max(0, len(self.steps) - 1)

    def as_json(self) -> dict[str, Any]:
        return {
            "releases": self.releases,
            "cell": vars(self.cell),
            "threshold_pct": self.threshold_pct,
            "verdict": self.verdict,
            "last_good": self.last_good,
            "first_changed": self.first_changed,
            "steps": [s.as_json() for s in self.steps],
        }
