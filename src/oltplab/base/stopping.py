"""When a cell has measured enough: the adaptive stopping rule, a pure function of the
per-second series so far, the same whether a run applies it live or `oltplab replay`
applies it to series already recorded or imported.

Every 10 s from `min_seconds` on (every 5 s when `min_seconds` is under 20 s), the series
so far is cut where MSER-5 puts the end of the warm-up, and the rule stops when, at three
checks in a row,
- the warm-up is over (the cut is not at the end of the span MSER-5 searches, which would
  mean the series is still climbing or falling there),
- the steady part is `min_seconds` long at least, and its mean's interval is narrower than the
  target: a batch-means interval, whose batches grow until they absorb the
  autocorrelation of neighbouring seconds that a per-second standard error ignores, and
- the straight line fitted to the steady part, plus one standard error, changes by less
  than twice the target across it (a drift, such as dirty pages piling up in a small
  buffer pool, widens batch means too slowly to be caught by them alone). On simulated
  seconds (5% noise, lag-1 correlation 0.3) a flat series stops after about 2 minutes,
  and of series losing 20% over their first 200 s, 4 in 300 stop before 180 s. A drift
  too slow to show within the seconds measured cannot be seen by any rule; `oltplab
  replay` shows what stopping would have changed on data of one's own.
A cell that never meets them runs to `max_seconds` and is `unsettled`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oltplab.base.stats import BATCH, Series, mser5_cut

CHECK_SECONDS = 10
CHECKS_IN_A_ROW = 3
# Fewer batches than this give a t quantile too wide to be worth computing.
MIN_BATCHES = 10
MAX_BATCH_CORRELATION = 0.2
CONFIDENCE = 0.95
UNSETTLED = "unsettled"


@dataclass(frozen=True)
class StopRule:
    target_ci_pct: float
    min_seconds: int
    max_seconds: int

    @property
    def check_seconds(self) -> int:
        # Cells asked to measure as little as 10 s are looked at more often, or three
        # checks in a row would take them half a minute past their minimum.
        return min(CHECK_SECONDS, max(BATCH, self.min_seconds // 2))

    @property
    def earliest_stop(self) -> int:
        """The soonest the rule can be met at three checks in a row."""
        first = max(self.min_seconds, self.check_seconds)
        return min(self.max_seconds, first + (CHECKS_IN_A_ROW - 1) * self.check_seconds)


@dataclass(frozen=True)
class Stop:
    """Where the rule stopped a series, and what it saw there."""

    seconds: int  # measured up to here
    settled: bool  # the rule was met; else it ran to max_seconds
    ci_pct: float | None  # the steady mean's half-width there, % of the mean
    cut: int  # the warm-up MSER-5 cut there, in seconds
    drift_pct: float | None = None  # the fitted line's change across the steady part, bounded
    warming: bool = False  # the cut sat at the end of MSER-5's span: still climbing or falling

    def describe(self) -> str:
        known = f", steady mean +-{self.ci_pct:.1f}%" if self.ci_pct is not None else ""
        if self.settled:
            return f"stopped at {self.seconds} s{known} (warm-up {self.cut} s)"
        # Which condition failed is what a reader needs to trust the flag (or not).
        drift = f", drift up to {self.drift_pct:.1f}%" if self.drift_pct is not None else ""
        warming = ", still warming up" if self.warming else ""
        return f"unsettled after {self.seconds} s{known}{drift}{warming}"


def batch_means_half_width(steady: np.ndarray, confidence: float = CONFIDENCE) -> float | None:
    """Half-width of the interval of the mean of an autocorrelated series, by batch means.
    The batches start at 5 s (or a fortieth of the series; shorter when fewer than 50 s
    are steady, so that ten remain) and double while their means are still correlated
    with their neighbours (lag-1 correlation above 0.2), as long as ten batches remain.
    On simulated seconds with 5% noise this covers the true mean in 93-95% of series
    without correlation, 93% at a lag-1 correlation of 0.3 over 120 s (91% over 30 s),
    and 91% at 0.8 over 300 s (86% over 120 s: a strongly correlated series needs
    longer); one standard error per second covers about half as often there."""
    size = max(1, min(max(BATCH, len(steady) // 40), len(steady) // MIN_BATCHES))
    chosen = None
    while len(steady) // size >= MIN_BATCHES:
        batches = len(steady) // size
        means = steady[len(steady) - batches * size :].reshape(batches, size).mean(axis=1)
        chosen = means
        if np.corrcoef(means[:-1], means[1:])[0, 1] < MAX_BATCH_CORRELATION:
            break
        size *= 2
    if chosen is None:
        return None
    # Imported here: every command loads the spec, which holds a stop rule, and
    # scipy.special alone takes a third of a second to import.
    from scipy.special import stdtrit

    quantile = float(stdtrit(len(chosen) - 1, 0.5 + confidence / 2))
    return quantile * float(chosen.std(ddof=1)) / len(chosen) ** 0.5


def drift_bound(steady: np.ndarray) -> float:
    """How much the straight line fitted to the series changes across it, plus one standard
    error of that change: a drift the noise still hides is not taken for none."""
    seconds = np.arange(len(steady), dtype=float)
    slope, intercept = np.polyfit(seconds, steady, 1)
    residuals = steady - (slope * seconds + intercept)
    spread = float(((seconds - seconds.mean()) ** 2).sum()) ** 0.5
    slope_error = float(residuals.std(ddof=2)) / spread if spread else 0.0
    return (abs(float(slope)) + slope_error) * len(steady)


def _judged(values: np.ndarray, seconds: int, rule: StopRule) -> Stop:
    part = values[:seconds]
    cut = mser5_cut(part)
    warming = cut >= (len(part) // BATCH // 2 - 1) * BATCH
    steady = part[cut:]
    mean = float(steady.mean()) if len(steady) else 0.0
    half_width = batch_means_half_width(steady)
    if half_width is None or mean <= 0 or len(steady) < rule.min_seconds:
        return Stop(seconds, False, None, cut, warming=warming)
    ci_pct = 100 * half_width / mean
    drift_pct = 100 * drift_bound(steady) / mean
    target = rule.target_ci_pct
    settled = not warming and ci_pct <= target and drift_pct <= 2 * target
    return Stop(seconds, settled, ci_pct, cut, drift_pct, warming)


def first_stop(series: Series, rule: StopRule) -> Stop | None:
    """The check at which the rule was met for the third time in a row, if it was yet."""
    values = np.asarray(series, dtype=float)
    end = min(len(values), rule.max_seconds)
    met = 0
    step = rule.check_seconds
    for seconds in range(max(rule.min_seconds, step), end + 1, step):
        judged = _judged(values, seconds, rule)
        # Looking again every few seconds, a rule met once by chance would stop drifting
        # cells early now and then; met at three checks in a row, seldom.
        met = met + 1 if judged.settled else 0
        if met == CHECKS_IN_A_ROW:
            return judged
    return None


def stop_point(series: Series, rule: StopRule) -> Stop:
    """Where the rule stops this series: its first stop, else its end (at most
    max_seconds), settled there only if the rule holds there."""
    if (found := first_stop(series, rule)) is not None:
        return found
    values = np.asarray(series, dtype=float)
    end = min(len(values), rule.max_seconds)
    return _judged(values, end, rule) if end else Stop(0, False, None, 0)
