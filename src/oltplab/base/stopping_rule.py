"""When a cell has measured enough: the adaptive stopping rule, a pure function of the
per-second series so far (and of the engine's state, when its telemetry was recorded), the
same whether a run applies it live or `oltplab replay` applies it to series already
recorded or imported.

Every 10 s from `min_seconds` on (every 5 s when `min_seconds` is under 20 s), the series
so far is cut where MSER-5 puts the end of the warm-up, and the rule is met when
- the warm-up is over (the cut is not at the end of the span MSER-5 searches, which would
  mean the series is still climbing or falling there),
- the steady part is `min_seconds` long at least, and its mean's interval is narrower than the
  target: a batch-means interval, whose batches grow until they absorb the
  autocorrelation of neighbouring seconds that a per-second standard error ignores,
- the straight line fitted to the steady part, and to its last half and last quarter, plus
  one standard error, changes by less than twice the target across each (a drift, such as
  dirty pages piling up in a small buffer pool, widens batch means too slowly to be caught
  by them alone; one that began lately shows in the shorter windows first), and
- no engine-state signal shows a trend over the same windows (base/stationarity.py):
  history list length, checkpoint age, dirty and free pages, pending I/O.

Met at three checks in a row, it stops the cell, but never before the cell's block has
shown how far its slow drifts reach: a slow drift can start after minutes of flat seconds,
and nothing in the seconds before it can tell. So the first repetition of each block
(engine, tier, workload, threads) to run measures its whole length, and its series gives
the horizon: the first check from which its steady mean stays within half the target of
its whole-length one. Later repetitions stop by the rule, not before that horizon. A block
measured once gets no early stop; `oltplab replay` shows, on data of one's own, what the
rule would have changed and saved. A cell that never meets the rule runs to `max_seconds`
and is `unsettled`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from oltplab.base.stationarity import MIN_WINDOW_SECONDS, SCALES, StateSignal, first_trend
from oltplab.base.stats import BATCH, Series, mser5_cut

CHECK_SECONDS = 10
CHECKS_IN_A_ROW = 3
# Fewer batches than this give a t quantile too wide to be worth computing.
MIN_BATCHES = 10
MAX_BATCH_CORRELATION = 0.2
CONFIDENCE = 0.95


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
    drift_pct: float | None = None  # the fitted line's largest change across a window, bounded
    warming: bool = False  # the cut sat at the end of MSER-5's span: still climbing or falling
    trend: str | None = None  # the engine-state trend seen there, described
    horizon: Horizon | None = None  # what the block's full-length cell showed, if anything
    target_ci_pct: float | None = None  # the rule's target, to say which condition failed

    def describe(self) -> str:
        known = f", steady mean ±{self.ci_pct:.1f}%" if self.ci_pct is not None else ""
        learned = f"; {self.horizon.describe()}" if self.horizon is not None else ""
        if self.settled and self.horizon is not None and self.horizon.learning:
            return f"ran its whole {self.seconds} s{known} (warm-up {self.cut} s){learned}"
        if self.settled:
            return f"stopped at {self.seconds} s{known} (warm-up {self.cut} s){learned}"
        # Which condition failed is what a reader needs to trust the flag (or not).
        target = self.target_ci_pct
        if target is not None and self.ci_pct is not None and self.ci_pct > target:
            known += f" (wider than ±{target:g}%)"
        drift = f", drift up to {self.drift_pct:.1f}%" if self.drift_pct is not None else ""
        if target is not None and self.drift_pct is not None and self.drift_pct > 2 * target:
            drift += f" (more than {2 * target:g}%)"
        warming = ", still warming up" if self.warming else ""
        trend = f", {self.trend}" if self.trend else ""
        return f"unsettled after {self.seconds} s{known}{drift}{warming}{trend}{learned}"


@dataclass(frozen=True)
class Horizon:
    """How soon a block's cells may stop: from what one of its cells showed over its whole
    length, or not before their end when none has run whole yet."""

    seconds: int  # no stop before this
    learning: bool = False  # no full-length cell yet: this one runs whole to show it

    def describe(self) -> str:
        if self.learning:
            return "the first of its block, it runs whole to show how far slow drifts reach"
        return f"its block's full-length cell held its mean from {self.seconds} s"


def learned_horizon(series: Series, rule: StopRule) -> int:
    """The first check from which a full-length cell's steady mean stays within half the
    target of its whole-length steady mean: its other half is left to the noise of the
    repetitions that stop there."""
    values = np.asarray(series, dtype=float)[: rule.max_seconds]
    whole_cut = mser5_cut(values)
    whole = float(values[whole_cut:].mean()) if len(values) > whole_cut else 0.0
    band = abs(whole) * rule.target_ci_pct / 200
    step = rule.check_seconds
    checks = range(max(rule.min_seconds, step), len(values) + 1, step)
    held = len(values)
    for seconds in reversed(checks):
        part = values[:seconds]
        cut = mser5_cut(part)
        if abs(float(part[cut:].mean()) - whole) > band:
            break
        held = seconds
    return held


def is_full_length(series: Series, planned_seconds: int) -> bool:
    """Whether a cell ran its whole planned length (sysbench may not print its last second
    or two), and so shows its block's horizon."""
    return len(series) >= planned_seconds - 2


def block_horizon(ran_before: Sequence[Series], planned_seconds: int, rule: StopRule) -> Horizon:
    """A cell's horizon, from the series its block measured before it (in the order they
    ran): that of the first to have run whole, or none yet (this cell then runs whole)."""
    full = [series for series in ran_before if is_full_length(series, planned_seconds)]
    return Horizon(learned_horizon(full[0], rule)) if full else Horizon(0, learning=True)


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


def _drift_pct(steady: np.ndarray, mean: float) -> float:
    """The largest bounded drift across the steady part and its last half and quarter."""
    windows = [steady[len(steady) - len(steady) // part :] for part in SCALES]
    return max(
        100 * drift_bound(window) / mean for window in windows if len(window) >= MIN_WINDOW_SECONDS
    )


def _judged(
    values: np.ndarray, seconds: int, rule: StopRule, signals: Sequence[StateSignal]
) -> Stop:
    target = rule.target_ci_pct
    part = values[:seconds]
    cut = mser5_cut(part)
    warming = cut >= (len(part) // BATCH // 2 - 1) * BATCH
    steady = part[cut:]
    mean = float(steady.mean()) if len(steady) else 0.0
    half_width = batch_means_half_width(steady)
    if half_width is None or mean <= 0 or len(steady) < max(rule.min_seconds, MIN_WINDOW_SECONDS):
        return Stop(seconds, False, None, cut, warming=warming, target_ci_pct=target)
    ci_pct = 100 * half_width / mean
    drift_pct = _drift_pct(steady, mean)
    found = first_trend(signals, cut, seconds, mean)
    settled = not warming and ci_pct <= target and drift_pct <= 2 * target and found is None
    trend = found.describe() if found is not None else None
    return Stop(seconds, settled, ci_pct, cut, drift_pct, warming, trend, None, target)


def first_stop(
    series: Series,
    rule: StopRule,
    horizon: Horizon | None,
    signals: Sequence[StateSignal] = (),
) -> Stop | None:
    """The check, not before the horizon, at which the rule was met for the third time in
    a row, if it was yet; never while the horizon is still being learned. Without a
    horizon the rule alone decides (as a replay may ask; a run always has one)."""
    if horizon is not None and horizon.learning:
        return None
    earliest = horizon.seconds if horizon is not None else 0
    values = np.asarray(series, dtype=float)
    end = min(len(values), rule.max_seconds)
    met = 0
    step = rule.check_seconds
    for seconds in range(max(rule.min_seconds, step), end + 1, step):
        judged = _judged(values, seconds, rule, signals)
        # Looking again every few seconds, a rule met once by chance would stop drifting
        # cells early now and then; met at three checks in a row, seldom.
        met = met + 1 if judged.settled else 0
        if met >= CHECKS_IN_A_ROW and seconds >= earliest:
            return replace(judged, horizon=horizon)
    return None


def stop_point(
    series: Series,
    rule: StopRule,
    horizon: Horizon | None = None,
    signals: Sequence[StateSignal] = (),
) -> Stop:
    """Where the rule stops this series: its first stop, else its end (at most
    max_seconds), settled there only if the rule holds there."""
    if (found := first_stop(series, rule, horizon, signals)) is not None:
        return found
    values = np.asarray(series, dtype=float)
    end = min(len(values), rule.max_seconds)
    if not end:
        return Stop(0, False, None, 0)
    return replace(_judged(values, end, rule, signals), horizon=horizon)
