"""Capacity under a latency objective: the highest offered rate whose percentile stays under
the limit, found by bracketing (doubling or halving the rate) and then bisecting, with
repetitions added at each rate until its verdict is clear or the budget is spent.

A rate *meets* the objective when the whole interval of its percentile lies under the
limit and the queue did not grow (not saturated); it *misses* it when the interval lies
above, or the queue grew. In between it is measured again; still in between at the budget,
its point decides and the probe says it was undecided. The capacity is the highest rate
that met the objective, bracketed by the lowest that missed it: `N tps [N, M]`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from oltplab.analysis.estimate import Estimate
from oltplab.errors import OltplabError

_SLO = re.compile(r"^\s*p(\d+(?:\.\d+)?)\s*<\s*(\d+(?:\.\d+)?)\s*(ms|s)\s*$")


@dataclass(frozen=True)
class Objective:
    percentile: float
    limit_ms: float

    @classmethod
    def parse(cls, text: str) -> Objective:
        match = _SLO.match(text)
        if match is None:
            raise OltplabError(f'--slo {text!r}: expected e.g. "p99<10ms" or "p99.9<1s"')
        percentile = float(match[1])
        if not 0 < percentile < 100:
            raise OltplabError(f"--slo {text!r}: the percentile must lie between 0 and 100")
        limit = float(match[2]) * (1000 if match[3] == "s" else 1)
        if limit <= 0:
            raise OltplabError(f"--slo {text!r}: the limit must be above 0")
        return cls(percentile, limit)

    def __str__(self) -> str:
        return f"p{self.percentile:g} < {self.limit_ms:g} ms"


@dataclass(frozen=True)
class Measured:
    """What one probe gives: the percentile with its interval, whether the queue grew."""

    latency: Estimate | None
    saturated: bool
    repetitions: int


@dataclass(frozen=True)
class Probe:
    rate: int
    measured: Measured
    meets: bool
    undecided: bool


@dataclass
class Capacity:
    objective: Objective
    probes: list[Probe] = field(default_factory=list)
    sustained: int | None = None  # the highest rate that met the objective
    missed: int | None = None  # the lowest rate above it that did not

    @property
    def estimate(self) -> Estimate | None:
        if self.sustained is None:
            return None
        high = self.missed if self.missed is not None else self.sustained
        return Estimate(float(self.sustained), float(self.sustained), float(high),
                        len(self.probes), "bracketing and bisection over rates")  # fmt: skip


Measure = Callable[[int, int], Measured]  # (rate, repetitions) -> what it gives


def _judge(objective: Objective, measured: Measured) -> bool | None:
    found = measured.latency
    if measured.saturated:
        return False
    if found is None or found.low is None or found.high is None:
        return None
    if found.high < objective.limit_ms:
        return True
    if found.low > objective.limit_ms:
        return False
    return None


def search(
    measure: Measure,
    objective: Objective,
    *,
    start: int = 100,
    highest: int = 1_000_000,
    precision: float = 0.05,
    max_repetitions: int = 4,
) -> Capacity:
    """The capacity: brackets by doubling or halving from `start`, then bisects until the
    bracket is within `precision` of its top."""
    found = Capacity(objective)

    def meets(rate: int) -> bool:
        for repetitions in range(1, max_repetitions + 1):
            measured = measure(rate, repetitions)
            verdict = _judge(objective, measured)
            if verdict is not None:
                found.probes.append(Probe(rate, measured, verdict, False))
                return verdict
        point = measured.latency.point if measured.latency else math.inf
        leaning = point < objective.limit_ms
        found.probes.append(Probe(rate, measured, leaning, True))
        return leaning

    low: int | None = None
    high: int | None = None
    rate = start
    while True:
        if meets(rate):
            low = rate
            if high is not None or rate >= highest:
                break
            rate = min(rate * 2, highest)
        else:
            high = rate
            if low is not None or rate <= 1:
                break
            rate = max(rate // 2, 1)
    while low is not None and high is not None and (high - low) > precision * high:
        middle = (low + high) // 2
        if middle in (low, high):
            break
        if meets(middle):
            low = middle
        else:
            high = middle
    found.sustained, found.missed = low, high
    return found
