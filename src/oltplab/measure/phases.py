"""Where a run's time goes, by stage: engine setup, warm-up, cells, summaries and the rest.

Each stage's seconds are summed as the run moves from one to the next, and said in one
line of the results' oltplab.log when the run ends (`phases: ...`), so that the time of a
run, of a suite of runs or of a test session can be told apart from the measurement it
paid for.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum

PHASES_LINE = "phases:"


class Stage(StrEnum):
    SETUP = "engine setup"  # fetch, initialise, prepare; restore, start and stop per session
    WARM_UP = "warm-up"
    CELLS = "cells"
    SUMMARIES = "summaries"  # pt-summary, and what session devices take of a warm engine
    OTHER = "other"  # checks, the ledger, everything between


@dataclass
class Phases:
    """A run's clock: the stage it is in now, and the seconds each stage has had."""

    clock: Callable[[], float] = time.monotonic
    seconds: dict[Stage, float] = field(default_factory=lambda: dict.fromkeys(Stage, 0.0))
    current: Stage = Stage.OTHER
    since: float = field(default=0.0)

    def __post_init__(self) -> None:
        self.since = self.clock()

    def enter(self, stage: Stage) -> None:
        now = self.clock()
        self.seconds[self.current] += now - self.since
        self.current, self.since = stage, now

    def line(self) -> str:
        """The stages so far, as oltplab.log says them (the current one counted to now)."""
        self.enter(self.current)
        parts = [f"{stage} {self.seconds[stage]:.1f} s" for stage in Stage]
        return f"{PHASES_LINE} {', '.join(parts)}"


_PART = re.compile(r"([a-z -]+?) (\d+(?:\.\d+)?) s")


def read_phases(lines: Iterable[str]) -> dict[Stage, float]:
    """The stages' seconds summed over every `phases:` line among lines (a log may hold
    several runs: a resumed one, an experiment's)."""
    total = dict.fromkeys(Stage, 0.0)
    for line in lines:
        _, found, said = line.partition(f" {PHASES_LINE} ")
        if not found:
            continue
        for name, seconds in _PART.findall(said):
            total[Stage(name.strip(", "))] += float(seconds)
    return total
