"""Figures with their intervals, and which differences are real.

Every figure that carries an interval is an `Estimate`: its point and its interval come
from one set of samples (the steady per-second TPS after the warm-up cut), so the point
always lies inside its interval. What sysbench printed for the whole run is another
figure, kept under its own name, never set next to an interval it was not made from.

A point (engine, scenario, tier, threads) is a set of repetitions, each a steady
per-second series; its mean TPS is the mean of the repetition means.

* Ten or more repetitions on both sides: bootstrap over repetitions. With few
  repetitions a plain percentile interval is too narrow, so the interval is the expanded
  percentile interval (Hesterberg 2015, "What teachers should know about the bootstrap"):
  the percentiles are taken at the level whose normal quantile equals
  sqrt(n/(n-1)) * t(n-1). When the rounds were interleaved (A B A B ...), repetitions are
  paired by round and resampled jointly, which cancels the drift both engines saw. In
  the rare skewed case where the percentile interval misses the point, it is widened to
  it: an interval never excludes its own point.
* Two repetitions: no interval ("too few repetitions"); its t quantile alone, 12.7 at 95%,
  makes any interval over them all width. A figure of one positive quantity (throughput,
  latency, a cost) has its interval on the log scale, so it never reaches 0.
* Three to nine repetitions: too few distinct resamples for a bootstrap (with 3 it calls
  12% of no-change comparisons significant in our simulations, with 5 and a dip now and
  then 10%), so a t interval on the log of the repetition means (Welch; or paired by
  round) is used instead, around the ratio of the means shown (widened to it in the rare
  case it falls outside).
* One run on either side: the per-second series are autocorrelated, so the standard error
  of a mean uses the long-run variance of an AR(1) series, s^2 / n * (1 + rho) / (1 - rho)
  (the quantity a circular block bootstrap estimates, without its resampling cost), and
  the interval of a ratio is a t interval on the log of the two means (delta method).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from functools import cache, cached_property

import numpy as np

from oltplab.base.stats import MIN_REPETITIONS

DRAWS = 4000
CONFIDENCE = 0.95
MIN_SECONDS = 20
# Below this many, a bootstrap's few distinct resamples under-cover: with 5 paired rounds
# and an occasional 15% dip on one side, 10% of A/A comparisons came out significant at
# 95% (tests/fast/test_compare.py); the t interval on the logs keeps to about 5%.
FEW_REPETITIONS = 10
SIGNIFICANT = "significant"
NOT_SIGNIFICANT = "not significant"
TOO_SHORT = f"inconclusive (run shorter than {MIN_SECONDS} s)"
DIFFERENT_MACHINES = "inconclusive (different machines)"


def too_few(repetitions: int) -> str:
    """What a figure from too few repetitions says instead of an interval."""
    return f"too few repetitions: {repetitions}; at least {MIN_REPETITIONS} needed here"


@dataclass(frozen=True)
class Estimate:
    """A figure with its interval; both from the same samples, so low <= point <= high.

    Without enough samples for an interval, low and high are None and `method` says why.
    """

    point: float
    low: float | None
    high: float | None
    n: int
    method: str

    def __post_init__(self) -> None:
        if (self.low is None) != (self.high is None):
            raise ValueError("an interval has both ends or neither")
        if self.low is not None and self.high is not None:
            # Rounding in the last place is tolerated; a point outside its interval is not.
            slack = 1e-9 * max(1.0, abs(self.point))
            if not self.low - slack <= self.point <= self.high + slack:
                raise ValueError(
                    f"{self.point} lies outside its interval [{self.low}, {self.high}]"
                )


@dataclass(frozen=True)
class Comparison:
    """a against b: the difference in percent, as an estimate, and what it means."""

    estimate: Estimate
    verdict: str
    # The machines each side was measured on, when they differ (a distributed run).
    machines: tuple[str, str] | None = None
    # Whether its interval is over repetitions (n counts them), not over one run's seconds.
    over_repetitions: bool = False

    @property
    def cross_machine(self) -> str:
        """ " (cross-machine: n1 vs n2)", or nothing when both sides share their machines."""
        return (
            f" (cross-machine: {self.machines[0]} vs {self.machines[1]})" if self.machines else ""
        )

    @property
    def diff_pct(self) -> float:
        return self.estimate.point

    def with_interval(self, confidence: str = "90%") -> str:
        """`-12.3% [-20.1, -4.5] (90%)`, or the point and its verdict without an interval."""
        low, high = self.low_pct, self.high_pct
        if low is None or high is None:
            return f"{self.diff_pct:+.1f}% ({self.verdict})"
        return f"{self.diff_pct:+.1f}% [{low:+.1f}, {high:+.1f}] ({confidence})"

    @property
    def low_pct(self) -> float | None:
        return self.estimate.low

    @property
    def high_pct(self) -> float | None:
        return self.estimate.high

    @property
    def n(self) -> int:
        return self.estimate.n

    @property
    def method(self) -> str:
        return self.estimate.method

    def interval(self) -> str:
        if self.low_pct is None or self.high_pct is None:
            return "-"
        return f"[{self.low_pct:+.1f}, {self.high_pct:+.1f}]"

    def change(self) -> str:
        """-20.2% [-23.1, -17.0], with the machines when they differ; an undecided
        comparison says why instead of an interval."""
        if self.low_pct is None:
            return f"{self.diff_pct:+.1f}% ({self.verdict}){self.cross_machine}"
        return f"{self.diff_pct:+.1f}% {self.interval()}{self.cross_machine}"

    def ratio(self) -> Estimate:
        """The same comparison as a ratio a / b (1.0: equal)."""
        e = self.estimate
        low = None if e.low is None else 1 + e.low / 100
        high = None if e.high is None else 1 + e.high / 100
        return Estimate(1 + e.point / 100, low, high, e.n, e.method)


def _lag1(series: np.ndarray) -> float:
    """The lag-1 autocorrelation, kept in [0, 0.95] (a negative one would narrow intervals)."""
    centred = series - series.mean()
    denominator = float(np.dot(centred, centred))
    rho = float(np.dot(centred[:-1], centred[1:]) / denominator) if denominator else 0.0
    return min(max(rho, 0.0), 0.95)


def long_run_variance_of_mean(series: np.ndarray) -> float:
    """Var(mean) of an autocorrelated series, from its AR(1) long-run variance."""
    n = len(series)
    rho = _lag1(series)
    return float(series.var(ddof=1)) / n * (1 + rho) / (1 - rho)


@dataclass(frozen=True)
class PointSample:
    """The steady per-second series of each repetition of one point, by repetition number.

    A per-transaction figure (server CPU per transaction) is weighted by each second's
    transactions, so a repetition's mean is its total over its total transactions.
    """

    series: dict[int, np.ndarray]
    weights: dict[int, np.ndarray] | None = None

    @property
    def reps(self) -> int:
        return len(self.series)

    def rep_mean(self, repetition: int) -> float:
        values = self.series[repetition]
        if self.weights is None:
            return float(values.mean())
        return float(np.average(values, weights=self.weights[repetition]))

    @cached_property
    def rep_means(self) -> np.ndarray:
        return np.array([self.rep_mean(r) for r in sorted(self.series)])

    @cached_property
    def mean(self) -> float:
        return float(self.rep_means.mean())

    @property
    def shortest(self) -> int:
        return min((len(s) for s in self.series.values()), default=0)

    @cached_property
    def repetition_boot(self) -> np.ndarray:
        """Means of bootstrap resamples of the repetition means, drawn once per point; the
        seed comes from the data, so a report is the same every time it is written."""
        data = b"".join(
            np.ascontiguousarray(s, dtype=float).tobytes() for _, s in sorted(self.series.items())
        )
        rng = np.random.default_rng(zlib.crc32(data))
        means = self.rep_means
        return means[rng.integers(0, len(means), size=(DRAWS, len(means)))].mean(axis=1)

    @cached_property
    def run_variance(self) -> float:
        """Var of the point's mean from its series' long-run variances: what the seconds
        say, for points with too few repetitions to say it themselves."""
        variances = [long_run_variance_of_mean(s) for s in self.series.values()]
        return sum(variances) / len(variances) ** 2


def _rng(*labels: object) -> np.random.Generator:
    # Seeded from what is compared, so a report is the same every time it is written.
    return np.random.default_rng(zlib.crc32("|".join(map(str, labels)).encode()))


def _expanded_quantiles(n: int, confidence: float) -> tuple[float, float]:
    from scipy import special  # loaded by the first interval, not by every command

    z = math.sqrt(n / (n - 1)) * t_quantile(confidence, n - 1)
    tail = float(special.ndtr(-z))  # the normal distribution's upper tail beyond z
    return tail, 1 - tail


@cache
def t_quantile(confidence: float, df: float) -> float:
    """Student's t quantile for a two-sided interval (scipy.special: no scipy.stats import,
    which alone costs most of a second)."""
    from scipy import special  # loaded by the first interval, not by every command

    return float(special.stdtrit(df, 1 - (1 - confidence) / 2))


def _judged(
    point: float, low: float, high: float, n: int, method: str, over_repetitions: bool = True
) -> Comparison:
    # The percentile interval of a skewed resampling can miss the point: widen it to it.
    low, high = min(low, point), max(high, point)
    verdict = SIGNIFICANT if low > 0 or high < 0 else NOT_SIGNIFICANT
    return Comparison(Estimate(point, low, high, n, method), verdict, None, over_repetitions)


def compare(
    a: PointSample,
    b: PointSample,
    *,
    paired: bool = False,
    label: str = "",
    confidence: float = CONFIDENCE,
) -> Comparison:
    """mean(a) / mean(b) - 1, in percent, with its interval and verdict."""
    rounds = sorted(a.series.keys() & b.series.keys())
    pair = paired and len(rounds) >= 2
    fewest = len(rounds) if pair else min(a.reps, b.reps)
    if a.reps >= 2 and b.reps >= 2 and fewest < MIN_REPETITIONS:
        point = (a.mean / b.mean - 1) * 100
        estimate = Estimate(point, None, None, fewest, too_few(fewest))
        return Comparison(estimate, f"too few repetitions: {fewest}")
    if a.reps >= 2 and b.reps >= 2 and min(a.reps, b.reps) < FEW_REPETITIONS:
        return _t_interval(a, b, rounds if pair else None, confidence)
    if a.reps >= 2 and b.reps >= 2:
        if pair:
            means_a = np.array([a.rep_mean(r) for r in rounds])
            means_b = np.array([b.rep_mean(r) for r in rounds])
            picks = _rng(label, a.reps, b.reps).integers(0, len(rounds), (DRAWS, len(rounds)))
            ratios = means_a[picks].mean(axis=1) / means_b[picks].mean(axis=1)
            point = means_a.mean() / means_b.mean()
            n, method = len(rounds), "bootstrap over rounds, paired"
        else:
            ratios = a.repetition_boot / b.repetition_boot
            point = a.mean / b.mean
            n, method = min(a.reps, b.reps), "bootstrap over repetitions"
        low, high = (np.quantile(ratios, _expanded_quantiles(n, confidence)) - 1) * 100
        return _judged((point - 1) * 100, float(low), float(high), n, method)
    return _one_run(a, b, confidence)


def _one_run(a: PointSample, b: PointSample, confidence: float) -> Comparison:
    seconds = min(a.shortest, b.shortest)
    point = (a.mean / b.mean - 1) * 100
    if seconds < MIN_SECONDS:
        return Comparison(Estimate(point, None, None, seconds, "too few seconds"), TOO_SHORT)
    log_se = math.sqrt(a.run_variance / a.mean**2 + b.run_variance / b.mean**2)
    half = t_quantile(confidence, seconds - 1) * log_se
    centre = math.log(a.mean / b.mean)
    low, high = (math.exp(centre - half) - 1) * 100, (math.exp(centre + half) - 1) * 100
    return _judged(point, low, high, seconds, "long-run variance over seconds", False)


def _t_interval(
    a: PointSample, b: PointSample, rounds: list[int] | None, confidence: float
) -> Comparison:
    if rounds is not None:
        logs = np.log([a.rep_mean(r) / b.rep_mean(r) for r in rounds])
        centre, se, df = logs.mean(), logs.std(ddof=1) / math.sqrt(len(logs)), len(logs) - 1
        method, n = "t interval over rounds, paired", len(rounds)
        point = float(np.mean([a.rep_mean(r) for r in rounds])) / float(
            np.mean([b.rep_mean(r) for r in rounds])
        )
    else:
        log_a, log_b = np.log(a.rep_means), np.log(b.rep_means)
        var_a, var_b = log_a.var(ddof=1) / len(log_a), log_b.var(ddof=1) / len(log_b)
        centre, se = log_a.mean() - log_b.mean(), math.sqrt(var_a + var_b)
        # Welch-Satterthwaite degrees of freedom
        df = (
            (var_a + var_b) ** 2 / (var_a**2 / (len(log_a) - 1) + var_b**2 / (len(log_b) - 1))
            if var_a + var_b > 0
            else len(log_a) + len(log_b) - 2
        )
        method, n = "Welch t interval over repetitions", min(a.reps, b.reps)
        point = a.mean / b.mean
    half = t_quantile(confidence, df) * se
    low, high = (math.exp(centre - half) - 1) * 100, (math.exp(centre + half) - 1) * 100
    return _judged((float(point) - 1) * 100, low, high, n, method)


def across_machines(
    a: PointSample,
    b: PointSample,
    machines: tuple[str, str],
    spread: tuple[float, int] | None,
    within: tuple[float, float],
    confidence: float = CONFIDENCE,
) -> Comparison:
    """a against b measured on different machines. The machines differ by more than noise,
    so the interval is the ratio's own (`within`: var of the log of each side's mean) plus
    twice the between-machine variance of the log (`spread`: variance and how many
    machines gave it), t with machines - 1 degrees of freedom; without a spread, undecided."""
    point = (a.mean / b.mean - 1) * 100
    if spread is None:
        n = min(a.reps, b.reps)
        estimate = Estimate(point, None, None, n, "different machines, no canary")
        return Comparison(estimate, DIFFERENT_MACHINES, machines)
    variance, count = spread
    half = t_quantile(confidence, count - 1) * math.sqrt(sum(within) + 2 * variance)
    centre = math.log(a.mean / b.mean)
    low, high = (math.exp(centre - half) - 1) * 100, (math.exp(centre + half) - 1) * 100
    judged = _judged(point, low, high, count, "between-machine spread of the canaries", False)
    return Comparison(judged.estimate, judged.verdict, machines)


def mean_estimate(sample: PointSample, confidence: float = CONFIDENCE) -> Estimate:
    """The mean of repetition means with its interval (t over repetitions; for one run, the
    series' long-run variance). A positive figure (throughput, latency, a cost) gets its
    interval on the log scale, so it stays positive however few the repetitions: with 2,
    a linear t interval reaches far below 0."""
    positive = sample.mean > 0 and all(s.min() > 0 for s in sample.series.values())
    if 2 <= sample.reps < MIN_REPETITIONS:
        return Estimate(sample.mean, None, None, sample.reps, too_few(sample.reps))
    if sample.reps >= 2:
        means = sample.rep_means
        method = f"t interval over {len(means)} repetitions"
        spread = np.log(means) if positive and means.min() > 0 else means
        half = t_quantile(confidence, len(means) - 1) * spread.std(ddof=1) / math.sqrt(len(means))
        return _around(sample.mean, half, positive, len(means), method)
    seconds = sample.shortest
    if seconds < MIN_SECONDS:
        return Estimate(sample.mean, None, None, seconds, TOO_SHORT)
    standard_error = math.sqrt(sample.run_variance)
    if positive:
        standard_error /= sample.mean  # delta method: the log's standard error
    half = t_quantile(confidence, seconds - 1) * standard_error
    return _around(sample.mean, half, positive, seconds, "long-run variance over seconds")


def _around(point: float, half: float, log_scale: bool, n: int, method: str) -> Estimate:
    if log_scale:
        return Estimate(point, point * math.exp(-half), point * math.exp(half), n, method)
    return Estimate(point, point - half, point + half, n, method)
