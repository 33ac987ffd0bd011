"""Which differences are real: bootstrap confidence intervals for ratios of mean TPS.

A point (engine, scenario, tier, threads) is a set of repetitions, each a steady
per-second series. Its mean TPS is the mean of the repetition means.

* Five or more repetitions on both sides: bootstrap over repetitions. With few
  repetitions a plain percentile interval is too narrow, so the interval is the expanded
  percentile interval (Hesterberg 2015, "What teachers should know about the bootstrap"):
  the percentiles are taken at the level whose normal quantile equals
  sqrt(n/(n-1)) * t(n-1). When the rounds were interleaved (A B A B ...), repetitions are
  paired by round and resampled jointly, which cancels the drift both engines saw.
* Two to four repetitions: too few distinct resamples for any bootstrap (with 3 it calls
  12% of no-change comparisons significant in our simulations), so a t interval on the log
  of the repetition means (Welch; or paired by round) is used instead.
* One run on either side: a circular block bootstrap over the per-second series, which
  keeps its autocorrelation; the block length is the plug-in rule for an AR(1) series
  (after Politis & White 2004), b = (6 rho^2)^(1/3) / (1 - rho^2)^(2/3) * n^(1/3).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import stats as scipy_stats

DRAWS = 4000
# Block resampling costs n draws per resample; 2000 resamples pin a 95% percentile well.
BLOCK_DRAWS = 2000
CONFIDENCE = 0.95
MIN_SECONDS = 20
FEW_REPETITIONS = 5
SIGNIFICANT = "significant"
NOT_SIGNIFICANT = "not significant"
INCONCLUSIVE = "inconclusive (too few samples)"


@dataclass(frozen=True)
class PointSample:
    """The steady per-second series of each repetition of one point, by repetition number."""

    series: dict[int, np.ndarray]

    @property
    def reps(self) -> int:
        return len(self.series)

    @property
    def mean(self) -> float:
        return float(np.mean([s.mean() for s in self.series.values()]))

    @property
    def shortest(self) -> int:
        return min((len(s) for s in self.series.values()), default=0)

    # The bootstrap distribution of a point is drawn once and reused by every comparison it
    # takes part in; its seed comes from the data, so it is the same in every report.
    def _rng(self) -> np.random.Generator:
        data = b"".join(
            np.ascontiguousarray(s, dtype=float).tobytes() for _, s in sorted(self.series.items())
        )
        return np.random.default_rng(zlib.crc32(data))

    @cached_property
    def repetition_boot(self) -> np.ndarray:
        """Means of bootstrap resamples of the repetition means."""
        means = np.array([s.mean() for s in self.series.values()])
        return means[self._rng().integers(0, len(means), size=(DRAWS, len(means)))].mean(axis=1)

    @cached_property
    def block_boot(self) -> np.ndarray:
        """Means of circular block bootstrap resamples, averaged over repetitions."""
        rng = self._rng()
        return np.mean(
            [block_bootstrap_means(s, rng, BLOCK_DRAWS) for s in self.series.values()], axis=0
        )


@dataclass(frozen=True)
class Comparison:
    diff_pct: float
    low_pct: float
    high_pct: float
    verdict: str
    n: int
    method: str

    def interval(self) -> str:
        return f"[{self.low_pct:+.1f}, {self.high_pct:+.1f}]"


def _rng(*labels: object) -> np.random.Generator:
    # Seeded from what is compared, so a report is the same every time it is written.
    return np.random.default_rng(zlib.crc32("|".join(map(str, labels)).encode()))


def block_length(series: np.ndarray) -> int:
    n = len(series)
    if n < 4:
        return 1
    centred = series - series.mean()
    denominator = float(np.dot(centred, centred))
    rho = float(np.dot(centred[:-1], centred[1:]) / denominator) if denominator else 0.0
    rho = min(max(rho, 0.0), 0.95)
    length = (6 * rho**2) ** (1 / 3) / (1 - rho**2) ** (2 / 3) * n ** (1 / 3)
    return int(min(max(1, round(length)), max(1, n // 4)))


def block_bootstrap_means(series: np.ndarray, rng: np.random.Generator, draws: int) -> np.ndarray:
    """Means of circular block bootstrap resamples, from the means of all n circular blocks."""
    n = len(series)
    b = block_length(series)
    wrapped = np.concatenate([series, series[: b - 1]])
    sums = np.convolve(wrapped, np.ones(b), mode="valid")[:n]  # every circular block's sum
    blocks = math.ceil(n / b)
    picks = rng.integers(0, n, size=(draws, blocks))
    # A resample is `blocks` whole blocks trimmed to n values; the trim is spread evenly.
    return sums[picks].sum(axis=1) / (blocks * b)


def _expanded_quantiles(n: int, confidence: float) -> tuple[float, float]:
    if n < 2:
        alpha = 1 - confidence
        return alpha / 2, 1 - alpha / 2
    t = scipy_stats.t.ppf(1 - (1 - confidence) / 2, n - 1)
    z = math.sqrt(n / (n - 1)) * t
    tail = float(scipy_stats.norm.sf(z))
    return tail, 1 - tail


def _verdict(low: float, high: float) -> str:
    return SIGNIFICANT if low > 0 or high < 0 else NOT_SIGNIFICANT


def compare(
    a: PointSample,
    b: PointSample,
    *,
    paired: bool = False,
    label: str = "",
    draws: int = DRAWS,
    confidence: float = CONFIDENCE,
) -> Comparison:
    """mean(a) / mean(b) - 1, in percent, with its interval and verdict."""
    diff = (a.mean / b.mean - 1) * 100 if b.mean else float("nan")
    rng = _rng(label, a.reps, b.reps)
    rounds = sorted(a.series.keys() & b.series.keys())
    if a.reps >= 2 and b.reps >= 2 and min(a.reps, b.reps) < FEW_REPETITIONS:
        return _t_interval(a, b, rounds if paired and len(rounds) >= 2 else None, diff, confidence)
    if a.reps >= 2 and b.reps >= 2:
        if paired and len(rounds) >= 2:
            means_a = np.array([a.series[r].mean() for r in rounds])
            means_b = np.array([b.series[r].mean() for r in rounds])
            picks = rng.integers(0, len(rounds), size=(draws, len(rounds)))
            ratios = means_a[picks].mean(axis=1) / means_b[picks].mean(axis=1)
            n, method = len(rounds), "bootstrap over rounds, paired"
        else:
            ratios = a.repetition_boot / b.repetition_boot
            n, method = min(a.reps, b.reps), "bootstrap over repetitions"
        low_q, high_q = _expanded_quantiles(n, confidence)
    else:
        if min(a.shortest, b.shortest) < MIN_SECONDS:
            return Comparison(
                diff,
                float("nan"),
                float("nan"),
                INCONCLUSIVE,
                min(a.shortest, b.shortest),
                "too few seconds",
            )
        ratios = a.block_boot / b.block_boot
        n, method = min(a.shortest, b.shortest), "block bootstrap over seconds"
        low_q, high_q = _expanded_quantiles(0, confidence)
    low, high = (np.quantile(ratios, [low_q, high_q]) - 1) * 100
    return Comparison(diff, float(low), float(high), _verdict(low, high), n, method)


def _t_interval(
    a: PointSample, b: PointSample, rounds: list[int] | None, diff: float, confidence: float
) -> Comparison:
    quantile = 1 - (1 - confidence) / 2
    if rounds is not None:
        logs = np.log([a.series[r].mean() / b.series[r].mean() for r in rounds])
        centre, se, df = logs.mean(), logs.std(ddof=1) / math.sqrt(len(logs)), len(logs) - 1
        method, n = "t interval over rounds, paired", len(rounds)
    else:
        log_a = np.log([s.mean() for s in a.series.values()])
        log_b = np.log([s.mean() for s in b.series.values()])
        var_a, var_b = log_a.var(ddof=1) / len(log_a), log_b.var(ddof=1) / len(log_b)
        centre, se = log_a.mean() - log_b.mean(), math.sqrt(var_a + var_b)
        # Welch-Satterthwaite degrees of freedom
        df = (
            (var_a + var_b) ** 2 / (var_a**2 / (len(log_a) - 1) + var_b**2 / (len(log_b) - 1))
            if var_a + var_b > 0
            else len(log_a) + len(log_b) - 2
        )
        method, n = "Welch t interval over repetitions", min(a.reps, b.reps)
    half = float(scipy_stats.t.ppf(quantile, df)) * se
    low, high = (math.exp(centre - half) - 1) * 100, (math.exp(centre + half) - 1) * 100
    return Comparison(diff, low, high, _verdict(low, high), n, method)


def mean_interval(sample: PointSample, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The mean of repetition means with its interval (t for repetitions, blocks for one run)."""
    if sample.reps >= 2:
        means = np.array([s.mean() for s in sample.series.values()])
        half = (
            scipy_stats.t.ppf(1 - (1 - confidence) / 2, len(means) - 1)
            * means.std(ddof=1)
            / math.sqrt(len(means))
        )
        return float(means.mean() - half), float(means.mean() + half)
    if sample.shortest < MIN_SECONDS:
        return float("nan"), float("nan")
    low, high = np.quantile(sample.block_boot, [(1 - confidence) / 2, 1 - (1 - confidence) / 2])
    return float(low), float(high)
