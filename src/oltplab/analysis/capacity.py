"""Capacity under a latency objective: the highest offered rate whose percentile stays under
the limit, found by bracketing (doubling or halving the rate) and then bisecting, with
repetitions added at each rate until its verdict is clear or the budget is spent.

A rate *meets* the objective when the whole interval of its percentile lies under the
limit and the queue did not grow (not saturated); it *misses* it when the interval lies
above, or the queue grew. In between it is measured again; still in between at the budget,
its point decides and the probe says it was undecided. The capacity is the highest rate
that met the objective, bracketed by the lowest that missed it: `N tps [N, M]`.

A probe that missed with fewer client threads than its rate needed (more than the
machine's cores allow sysbench) says nothing of the engine: it is marked client-limited,
the search stops there, and the capacity is "at least N", the client's limit named.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oltplab.analysis.estimate import Estimate
from oltplab.base.errors import OltplabError
from oltplab.base.nesting import load_json
from oltplab.store.directory import ResultsDir

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


# Client threads for an offered rate, by Little's law: n threads offer rate * W at once,
# W the time a transaction takes. The closed loop gives W as m / T (m threads serving T tps),
# but its threads never sleep: in open loop each event wakes an idle thread and the server,
# and W measured here was 3-8 times longer (0.04 ms closed loop, 0.2-0.3 ms at the median
# of open-loop probes). So W is the longer of the closed loop's and the median latency of
# the last probe that met the objective at a lower rate. HEADROOM keeps the client's
# threads at most two-thirds busy, so that latency can grow under load (and arrivals
# bunch) before the queue is the client's.
HEADROOM = 1.5
# A sysbench thread mostly waits for the server, so a few share a core; many more and their
# own scheduling delays enter the latency measured. At most 64 in any case.
THREADS_PER_CORE = 4
MAX_THREADS = 64


def max_client_threads(cores: int) -> int:
    return min(MAX_THREADS, THREADS_PER_CORE * max(cores, 1))


def client_threads(
    rate: int, closed: dict[int, float], cores: int, open_loop_ms: float | None = None
) -> tuple[int, bool]:
    """Threads to offer `rate` tps, and whether Little's law asks for more than the cores
    allow (the probe then runs with the most there may be, and a miss is the client's)."""
    most = max_client_threads(cores)
    wanted = HEADROOM * rate
    # n threads do what m <= n did in the closed loop, n / m times over.
    needed = next(
        (n for n in range(1, most + 1)
         if max((tps * n / m for m, tps in closed.items() if m <= n), default=0.0) >= wanted),
        most + 1,
    )  # fmt: skip
    if open_loop_ms is not None:
        needed = max(needed, math.ceil(wanted * open_loop_ms / 1000))
    return min(needed, most), needed > most


@dataclass(frozen=True)
class Measured:
    """What one probe gives: the percentile with its interval, whether the queue grew."""

    latency: Estimate | None
    saturated: bool
    repetitions: int
    # Fewer client threads than the rate needed, and it missed: no verdict on the engine.
    client_limited: bool = False
    threads: int = 0  # the client threads that offered the rate


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
    client_limit: int | None = None  # the lowest rate the client could not offer

    @property
    def estimate(self) -> Estimate | None:
        if self.sustained is None:
            return None
        high = self.missed if self.missed is not None else self.sustained
        return Estimate(float(self.sustained), float(self.sustained), float(high),
                        len(self.probes), "bracketing and bisection over rates")  # fmt: skip


Measure = Callable[[int, int], Measured]  # (rate, repetitions) -> what it gives


def judge(objective: Objective, measured: Measured) -> bool | None:
    """Met (True), missed (False) or not yet clear (None)."""
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

    def meets(rate: int) -> bool | None:
        """Whether the rate meets the objective; None when the client could not offer it."""
        for repetitions in range(1, max_repetitions + 1):
            measured = measure(rate, repetitions)
            if measured.client_limited:
                found.probes.append(Probe(rate, measured, False, True))
                found.client_limit = min(rate, found.client_limit or rate)
                return None
            verdict = judge(objective, measured)
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
        verdict = meets(rate)
        if verdict is None:  # the client's limit: no rate at or above it says anything
            break
        if verdict:
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
        verdict = meets(middle)
        if verdict is None:
            high = None
            break
        if verdict:
            low = middle
        else:
            high = middle
    found.sustained, found.missed = low, high
    return found


@dataclass(frozen=True)
class Found:
    """One engine and tier's capacity as `oltplab capacity` wrote it (capacity.json)."""

    engine: str
    tier: str
    objective: Objective
    sustained: int | None  # the highest rate that met the objective
    missed: int | None  # the lowest above it that did not
    client_limit: int | None  # the lowest rate the client could not offer
    closed_peak: float | None  # the closed-loop peak TPS, measured in the same run

    @classmethod
    def of(cls, row: dict[str, Any]) -> Found:
        return cls(row["engine"], row["tier"], Objective.parse(row["objective"]),
                   row["sustained_tps"], row["missed_tps"], row.get("client_limit_tps"),
                   row.get("closed_loop_peak_tps"))  # fmt: skip

    @property
    def share_of_peak(self) -> float | None:
        if not self.sustained or not self.closed_peak:
            return None
        return self.sustained / self.closed_peak

    def text(self) -> str:
        """`2,400 tps [2,400, 2,600]`, `at least 800 tps (beyond, from 1,600, the client's
        limit)`, or why there is none."""
        if not self.sustained:
            return "not even the lowest rate"
        if self.missed:
            return f"{self.sustained:,} tps [{self.sustained:,}, {self.missed:,}]"
        if self.client_limit:
            return (f"at least {self.sustained:,} tps (beyond, from {self.client_limit:,}, "
                    "the client's limit)")  # fmt: skip
        return f"at least {self.sustained:,} tps"

    def sustains(self) -> str:
        """`mysql-8.0.31 sustains 2,400 tps [2,400, 2,600] at p99 < 10 ms`; where no rate
        above it was missed, the bracket closes on the rate itself."""
        bracket = f"[{self.sustained:,}, {self.missed or self.sustained:,}]"
        return f"{self.engine} sustains {self.sustained:,} tps {bracket} at {self.objective}"


def read_capacities(results: Path) -> list[Found]:
    """What `oltplab capacity` found in this results directory, ranked; none if it never ran."""
    path = ResultsDir(results).capacity_json
    if not path.is_file():
        return []
    try:
        return [Found.of(row) for row in load_json(path.read_text())]
    except (ValueError, KeyError, TypeError, OltplabError) as exc:
        raise OltplabError(
            f"{path}: not a capacity result ({exc}); run oltplab capacity again"
        ) from None
