"""Simulations with known truth for the comparison statistics and the warm-up cut."""

import numpy as np
import pytest

from oltplab.analysis.estimate import (
    NOT_SIGNIFICANT,
    SIGNIFICANT,
    TOO_SHORT,
    Estimate,
    PointSample,
    compare,
    mean_estimate,
)
from oltplab.base.stats import mser5_cut, stalls

PHI, NOISE, RUN_NOISE = 0.7, 0.05, 0.02  # per-second AR(1) and run-to-run spread


def ar1(rng, level, seconds):
    shocks = rng.normal(0, NOISE * np.sqrt(1 - PHI**2), seconds)
    error = np.empty(seconds)
    error[0] = rng.normal(0, NOISE)
    for t in range(1, seconds):
        error[t] = PHI * error[t - 1] + shocks[t]
    return level * (1 + error)


def point(rng, level, reps=5, seconds=60):
    return PointSample(
        {r: ar1(rng, level * (1 + rng.normal(0, RUN_NOISE)), seconds) for r in range(1, reps + 1)}
    )


def significant_share(true_diff, trials=200, **kwargs):
    rng = np.random.default_rng(20261122 + int(true_diff * 1000))
    hits = 0
    for trial in range(trials):
        a, b = point(rng, 1000 * (1 + true_diff), **kwargs), point(rng, 1000, **kwargs)
        hits += compare(a, b, label=str(trial)).verdict == SIGNIFICANT
    return hits / trials


def test_a_true_ten_percent_difference_is_found():
    assert significant_share(0.10) >= 0.90


def test_no_difference_is_rarely_called_significant():
    assert significant_share(0.0) <= 0.05


def test_three_repetitions_use_a_t_interval_that_keeps_its_error_rate():
    assert significant_share(0.0, reps=3, seconds=30) <= 0.07
    assert significant_share(0.10, reps=3, seconds=30) >= 0.65  # t(2) is wide: the price of 3


def test_one_long_run_per_side_uses_the_long_run_variance_of_its_seconds():
    rng = np.random.default_rng(7)
    a, b = point(rng, 1100, reps=1, seconds=300), point(rng, 1000, reps=1, seconds=300)
    result = compare(a, b, label="x")
    assert result.method == "long-run variance over seconds"
    assert result.verdict == SIGNIFICANT and result.low_pct < 10 < result.high_pct + 5


def one_run_significant_share(true_diff, trials=400, seconds=120):
    """AR(1) seconds (phi 0.7) of one run per side, no run-to-run spread: an autocorrelated
    series taken for independent seconds would call a no-change significant far too often."""
    rng = np.random.default_rng(20261124 + int(true_diff * 1000))
    hits = 0
    for _ in range(trials):
        a = PointSample({1: ar1(rng, 1000 * (1 + true_diff), seconds)})
        b = PointSample({1: ar1(rng, 1000, seconds)})
        hits += compare(a, b).verdict == SIGNIFICANT
    return hits / trials


def test_one_run_per_side_keeps_its_error_rate_on_autocorrelated_seconds():
    assert one_run_significant_share(0.0) <= 0.07
    assert one_run_significant_share(0.05) >= 0.90


def test_too_few_seconds_is_inconclusive_and_says_why():
    rng = np.random.default_rng(8)
    result = compare(point(rng, 1100, reps=1, seconds=10), point(rng, 1000, reps=1, seconds=10))
    assert result.verdict == TOO_SHORT == "inconclusive (run shorter than 20 s)"
    assert result.low_pct is None and result.interval() == "-"
    assert mean_estimate(point(rng, 1000, reps=1, seconds=10)).low is None


def test_a_point_never_lies_outside_its_interval():
    rng = np.random.default_rng(11)
    for reps, seconds in ((1, 60), (3, 30), (5, 60), (8, 30)):
        for trial in range(50):
            a = point(rng, 1000 * (1 + rng.normal(0, 0.1)), reps=reps, seconds=seconds)
            b = point(rng, 1000, reps=reps, seconds=seconds)
            for paired in (False, True):
                found = compare(a, b, paired=paired, label=str(trial)).estimate
                assert found.low <= found.point <= found.high
            mean = mean_estimate(a)
            assert mean.low <= mean.point <= mean.high
    with pytest.raises(ValueError, match="outside its interval"):
        Estimate(5.0, 6.0, 7.0, 3, "made up")


def test_pairing_by_round_cancels_drift_that_hit_both_engines():
    rng = np.random.default_rng(9)
    drift = [0.8, 1.2, 0.9, 1.1, 1.0]  # the host got faster and slower between rounds
    a = PointSample({r: ar1(rng, 1050 * d, 60) for r, d in enumerate(drift, 1)})
    b = PointSample({r: ar1(rng, 1000 * d, 60) for r, d in enumerate(drift, 1)})
    assert compare(a, b, label="d").verdict == NOT_SIGNIFICANT
    paired = compare(a, b, paired=True, label="d")
    assert paired.verdict == SIGNIFICANT and paired.method == "t interval over rounds, paired"
    three = (
        PointSample({r: a.series[r] for r in (1, 2, 3)}),
        PointSample({r: b.series[r] for r in (1, 2, 3)}),
    )
    assert compare(*three, label="d").verdict == NOT_SIGNIFICANT
    assert compare(*three, paired=True, label="d").method == "t interval over rounds, paired"


def test_mean_interval_covers_the_truth():
    rng = np.random.default_rng(10)
    found = mean_estimate(point(rng, 1000))
    assert found.low < 1000 < found.high and found.high - found.low < 100


@pytest.mark.parametrize("ramp", [10, 30, 60])
def test_mser5_finds_a_planted_warm_up_ramp(ramp):
    rng = np.random.default_rng(ramp)
    warm = np.linspace(200, 1000, ramp) * (1 + rng.normal(0, 0.02, ramp))
    series = np.concatenate([warm, ar1(rng, 1000, 240)])
    assert abs(mser5_cut(series) - ramp) <= 5


def test_stalls_are_found_with_their_seconds():
    series = [100.0] * 10 + [3.0, 0.0, 5.0, 2.0] + [100.0] * 5 + [1.0, 1.0] + [100.0]
    assert stalls(series) == [(11, 14)]
    assert stalls([100.0] * 5 + [0.0] * 3) == [(6, 8)]
    # A server stopped for 5 s of a 6 s cell: most seconds stalled, the median 0.
    assert stalls([95.0, 0.0, 0.0, 0.0, 0.0, 4.0]) == [(2, 6)]
    assert stalls([0.0] * 6) == [(1, 6)]  # no work at all: a freeze from before the first second


def test_an_a_a_comparison_is_significant_about_as_often_as_its_level_says() -> None:
    """The same engine as A and B on a host that drifts between rounds, with session noise
    and, now and then, a 15% dip on one side: at 95%, about 5% of the comparisons may come
    out significant, never much more, at any number of paired rounds (with 5 rounds a
    bootstrap over them said 10%: too few distinct resamples)."""
    rng = np.random.default_rng(28)

    def significant(rounds: int) -> bool:
        sides: tuple[dict[int, np.ndarray], dict[int, np.ndarray]] = ({}, {})
        level = 1000.0
        for r in range(1, rounds + 1):
            level *= np.exp(rng.normal(0, 0.05))
            for side in sides:
                value = level * np.exp(rng.normal(0, 0.03)) * (0.85 if rng.random() < 0.15 else 1)
                side[r] = value * np.exp(rng.normal(0, 0.02, 8))
        found = compare(PointSample(sides[0]), PointSample(sides[1]), paired=True,
                        label=str(rng.random()))  # fmt: skip
        return found.verdict == SIGNIFICANT

    for rounds in (3, 5, 7, 10):
        rate = np.mean([significant(rounds) for _ in range(400)])
        assert rate <= 0.085, (rounds, rate)  # 5% nominal; 400 trials have a 1.1% error
