"""Between-session reproducibility: the same A/B measured in separate runs.

Paired rounds within a run cancel the host's drift, but not what a restart, a dataset
prepared again or another hour changes: each run's interval says how well that run knows
its own A/B, not how far the next session's will land. The same A/B measured in several
sessions shows it: each session's estimate (its own paired rounds, 90% interval), the
spread of those estimates (their standard deviation, in percent), and the estimate across
the sessions with an interval over sessions (Student's t on their log ratios), which never
claims more than the sessions allow.

A verdict from one run about something that differs between sessions (two builds, as
`bisect` measures them) is judged on its interval widened by the spread: each side grows to
sqrt(half-width^2 + (z * spread)^2), z the 90% two-sided normal quantile.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from pathlib import Path

from oltplab.analysis.equivalence import TOST_CONFIDENCE
from oltplab.analysis.estimate import Comparison, Estimate, compare, t_quantile
from oltplab.analysis.points import Points

# The 90% two-sided normal quantile (two one-sided tests at 5%).
Z90 = 1.6449


@dataclass(frozen=True)
class SessionEstimate:
    source: Path
    comparison: Comparison  # A against B within the session, paired, 90%


@dataclass(frozen=True)
class SessionSpread:
    a: str
    b: str  # the reference: the first engine
    scenario: str
    tier: str
    threads: int
    sessions: list[SessionEstimate]

    @property
    def estimates(self) -> list[float]:
        return [s.comparison.diff_pct for s in self.sessions]

    @property
    def spread_pct(self) -> float:
        """The standard deviation of the sessions' log ratios, in percent."""
        logs = [math.log1p(e / 100) for e in self.estimates]
        return statistics.stdev(logs) * 100

    @property
    def across(self) -> tuple[float, float, float]:
        """The estimate across sessions and its 90% interval over them, in percent."""
        logs = [math.log1p(e / 100) for e in self.estimates]
        mean = statistics.fmean(logs)
        half = t_quantile(TOST_CONFIDENCE, len(logs) - 1) * statistics.stdev(logs)
        half /= math.sqrt(len(logs))
        return math.expm1(mean) * 100, math.expm1(mean - half) * 100, math.expm1(mean + half) * 100

    @property
    def label(self) -> str:
        return f"{self.a} vs {self.b} ({self.scenario}, {self.tier}, {self.threads}t)"

    def lines(self) -> list[str]:
        """Each session's estimate within its run, the spread, and the estimate across."""
        point, low, high = self.across
        out = [f"{self.label}:"]
        out += [
            f"  session {i} ({s.source}): {s.comparison.with_interval()} within the run"
            for i, s in enumerate(self.sessions, 1)
        ]
        out.append(
            f"  between sessions: spread {self.spread_pct:.2f}% over {len(self.sessions)} "
            f"sessions; across them {point:+.1f}% [{low:+.1f}, {high:+.1f}] (90%)"
        )
        return out


def session_spreads(runs: list[Points]) -> list[SessionSpread]:
    """Every engine against the first engine, at each point all the runs measured both,
    one estimate per run; none with fewer than two runs."""
    if len(runs) < 2:
        return []
    per_run = [r.samples() for r in runs]
    first = runs[0].dataset.engine_names()[0]
    found = []
    common = set.intersection(*(set(samples) for samples in per_run))
    for scenario, tier, engine, threads in sorted(common):
        reference = (scenario, tier, first, threads)
        if engine == first or reference not in common:
            continue
        sessions = []
        for run, samples in zip(runs, per_run, strict=True):
            comparison = compare(
                samples[(scenario, tier, engine, threads)],
                samples[reference],
                paired=run.dataset.paired,
                label=f"{engine}|{first}",
                confidence=TOST_CONFIDENCE,
            )
            sessions.append(SessionEstimate(run.dataset.sources[0], comparison))
        found.append(SessionSpread(engine, first, scenario, tier, threads, sessions))
    return found


def widened(comparison: Comparison, spread_pct: float) -> Comparison:
    """The comparison's interval widened by a between-session spread (the point kept)."""
    e = comparison.estimate
    if e.low is None or e.high is None or spread_pct <= 0:
        return comparison
    extra = (Z90 * spread_pct) ** 2
    low = e.point - math.sqrt((e.point - e.low) ** 2 + extra)
    high = e.point + math.sqrt((e.high - e.point) ** 2 + extra)
    method = f"{e.method}, widened by a between-session spread of {spread_pct:.2f}%"
    return replace(comparison, estimate=Estimate(e.point, low, high, e.n, method))
