"""Change points: the same as Apache Otava's on recorded series, and the error rates a
simulation of noisy version series gives."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from oltplab.analysis.changepoints import change_points

# Apache Otava 0.8.0's answers, recorded by tests/data/changepoints/record_otava.py run in a
# virtualenv of its own (it pins numpy 2.2 and scipy < 1.17, older than oltplab's).
RECORDED = json.loads(
    (Path(__file__).parent.parent / "data" / "changepoints" / "otava-0.8.0.json").read_text()
)


@pytest.mark.parametrize("case", RECORDED, ids=[c["name"] for c in RECORDED])
def test_finds_what_otava_finds(case: dict) -> None:
    found = change_points(case["series"], **case["params"])
    assert [p.index for p in found] == case["otava"]
    assert [p.pvalue for p in found] == pytest.approx(case["pvalues"], rel=1e-6, abs=1e-9)


def noisy_series(
    rng: np.random.Generator, n: int, step_at: int | None = None, step: float = 0.10
) -> np.ndarray:
    """A version series as a noisy host measures it: each point the mean of 5 runs with 5%
    noise each, on top of an AR(1) drift of the host from point to point (rho 0.5, 1%)."""
    drift = np.zeros(n)
    for t in range(n):
        drift[t] = (0.5 * drift[t - 1] if t else 0.0) + rng.normal(0, 0.01)
    level = np.ones(n)
    if step_at is not None:
        level[step_at:] *= 1 + step
    runs = rng.normal(0, 0.05, (n, 5)).mean(axis=1)
    return 1000 * level * (1 + drift + runs)


def test_false_positives_and_power_on_simulated_series() -> None:
    rng = np.random.default_rng(2026)
    trials = 500
    false = sum(
        bool(change_points(noisy_series(rng, int(rng.integers(10, 21))))) for _ in range(trials)
    )
    found = 0
    for _ in range(trials):
        n = int(rng.integers(10, 21))
        at = int(rng.integers(3, n - 2))
        found += any(abs(p.index - at) <= 1 for p in change_points(noisy_series(rng, n, at)))
    # at most 5% of series with no change get one; a 10% step is found (within a point)
    # in at least 90% of them
    assert false / trials <= 0.05
    assert found / trials >= 0.90


def test_a_change_point_says_its_size() -> None:
    found = change_points([100, 101, 99, 100, 75, 76, 74, 75])
    assert [p.index for p in found] == [4]
    assert found[0].change_pct == pytest.approx(-25.0, abs=0.5)
