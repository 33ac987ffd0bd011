"""Precision: the stopping rule keeps A/A pairs from ending DIFFERENT under repeated looks
and finds a difference twice the margin; rounds are planned from a host's spread; a
per-transaction cost is weighted by transactions; isolation's CPU split and host advice."""

from __future__ import annotations

import numpy as np
import pytest

from oltplab.analysis.estimate import PointSample
from oltplab.analysis.precision import (
    DIFFERENT,
    MIN_ROUNDS,
    SAME,
    UNKNOWN,
    decide,
    first_rounds,
    round_spread_pct,
    rounds_needed,
)
from oltplab.cli.app import parse_duration, parse_percent
from oltplab.errors import OltplabError
from oltplab.isolation import CpuSplit, advice


def paired_rounds(
    rng: np.random.Generator, ratio: float, rounds: int, spread: float, drift: float = 0.1
) -> tuple[PointSample, PointSample]:
    """Rounds of A and B that share a drifting host level (what pairing cancels), each with
    its own session noise of `spread` (log scale), and 8 s of per-second values each."""
    a, b = {}, {}
    level = 1000.0
    for r in range(1, rounds + 1):
        level *= float(np.exp(rng.normal(0, drift)))
        for side, factor in ((a, ratio), (b, 1.0)):
            mean = level * factor * float(np.exp(rng.normal(0, spread)))
            side[r] = mean + rng.normal(0, mean * 0.02, 8)
    return PointSample(a), PointSample(b)


def sequential(a: PointSample, b: PointSample, margin: float, rounds: int) -> str:
    """The rule as `run --precision` applies it: a look after every round from the third."""
    for k in range(MIN_ROUNDS, rounds + 1):
        _, verdict = decide(first_rounds(a, k), first_rounds(b, k), margin, paired=True)
        if verdict != UNKNOWN:
            return verdict
    return UNKNOWN


def test_an_aa_pair_almost_never_ends_different_however_often_it_is_looked_at():
    rng = np.random.default_rng(7)
    verdicts = [sequential(*paired_rounds(rng, 1.0, 12, 0.03), 3.0, 12) for _ in range(400)]
    assert verdicts.count(DIFFERENT) <= 2  # at most 0.5% of 400
    assert verdicts.count(SAME) > 100


def test_a_difference_of_twice_the_margin_is_found_within_the_planned_rounds():
    spread = 3.0  # percent, round to round, of the log ratio
    planned = rounds_needed(spread * np.sqrt(2), 3.0)
    assert planned is not None
    rng = np.random.default_rng(11)
    verdicts = [
        sequential(*paired_rounds(rng, 1.07, planned, spread / 100), 3.0, planned)
        for _ in range(200)
    ]
    assert verdicts.count(DIFFERENT) >= 180
    assert verdicts.count(SAME) == 0


def test_rounds_needed_grow_with_the_spread_and_shrink_with_the_margin():
    assert rounds_needed(1.0, 3.0) == MIN_ROUNDS
    found = [rounds_needed(spread, 3.0) for spread in (2.0, 4.0, 8.0)]
    assert found == sorted(found) and found[0] is not None and found[-1] > found[0]  # type: ignore[operator]
    assert rounds_needed(4.0, 2.0) > rounds_needed(4.0, 4.0)  # type: ignore[operator]
    assert rounds_needed(500.0, 0.1, most=50) is None


def test_round_spread_is_the_spread_of_paired_log_ratios():
    a = PointSample({1: np.array([100.0, 100]), 2: np.array([110.0, 110]), 3: np.array([90.0])})
    b = PointSample({1: np.array([100.0]), 2: np.array([100.0]), 3: np.array([100.0])})
    expected = np.std(np.log([1.0, 1.1, 0.9]), ddof=1) * 100
    assert round_spread_pct(a, b) == pytest.approx(expected)
    assert round_spread_pct(PointSample({1: np.ones(3)}), b) is None


def test_a_per_transaction_cost_is_its_total_over_its_transactions():
    # Two seconds: 100 transactions at 10 us each, then 300 at 20 us each.
    sample = PointSample({1: np.array([10.0, 20.0])}, {1: np.array([100.0, 300.0])})
    assert sample.rep_mean(1) == pytest.approx((100 * 10 + 300 * 20) / 400)
    assert first_rounds(sample, 1).weights is not None


def test_the_cpu_split_gives_the_server_and_the_client_cpus_of_their_own():
    split = CpuSplit.of({0, 1})
    assert split is not None and split.server == {1} and split.client == {0}
    wide = CpuSplit.of(set(range(8)))
    assert wide is not None and wide.server == {4, 5, 6, 7} and not wide.server & wide.client
    assert CpuSplit.of({0}) is None


def test_the_host_check_advises_on_what_moves_numbers():
    facts = {
        "cpu_governor": "powersave",
        "turbo": "on",
        "transparent_hugepages": "always",
        "swap_used_bytes": 3 * 2**20,
    }
    said = advice(facts, [("stress (pid 42)", 0.95)])
    assert len(said) == 5
    assert "performance" in said[0] and "stress (pid 42) used 95%" in said[-1]
    quiet = {"cpu_governor": "not exposed", "turbo": "not exposed", "swap_used_bytes": 0}
    assert advice(quiet, []) == []


@pytest.mark.parametrize("text", ["0", "-3%", "fast", "101%", "nan"])
def test_a_bad_precision_is_one_line_naming_it(text: str) -> None:
    with pytest.raises(OltplabError, match=r"--precision .*: expected a percentage"):
        parse_percent(text, "--precision")


def test_budgets_read_as_times() -> None:
    assert parse_duration("90s", "--budget") == 90
    assert parse_duration("30m", "--budget") == 1800
    assert parse_duration("2h", "--budget") == 7200
    assert parse_duration("45", "--budget") == 2700  # minutes
    for bad in ("", "soon", "0m", "8d"):
        with pytest.raises(OltplabError, match="expected a time such as"):
            parse_duration(bad, "--budget")
