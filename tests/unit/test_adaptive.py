"""The adaptive stopping rule on known series, and replayed on a 2026-sized tree."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from oltplab.analysis.replay import replay_warm_ups
from oltplab.base.stopping import StopRule, batch_means_half_width, stop_point
from tests.cli import oltplab
from tests.synthetic import tree_2026

RULE = StopRule(target_ci_pct=2.0, min_seconds=60, max_seconds=900)


def ar1(rng: np.random.Generator, n: int, phi: float, level: float = 1000.0) -> np.ndarray:
    """Per-second TPS whose neighbouring seconds are correlated (phi), 5% noise."""
    noise = rng.normal(0, 0.05 * level * (1 - phi**2) ** 0.5, n)
    values = np.empty(n)
    values[0] = level
    for i in range(1, n):
        values[i] = level + phi * (values[i - 1] - level) + noise[i]
    return values


@pytest.mark.parametrize(
    ("phi", "seconds", "at_least"),
    [(0.3, 30, 0.88), (0.3, 120, 0.9), (0.8, 300, 0.88)],
)
def test_batch_means_cover_the_true_mean_of_correlated_seconds(phi, seconds, at_least) -> None:
    rng = np.random.default_rng(7)
    covered = naive_covered = 0
    for _ in range(400):
        series = ar1(rng, seconds, phi)
        half = batch_means_half_width(series)
        assert half is not None
        covered += abs(series.mean() - 1000) <= half
        naive = 1.96 * series.std(ddof=1) / len(series) ** 0.5
        naive_covered += abs(series.mean() - 1000) <= naive
    assert covered / 400 >= at_least, covered
    # The per-second standard error ignores the correlation and covers too rarely.
    assert naive_covered < covered, (naive_covered, covered)


def test_a_flat_series_stops_early_and_agrees_with_the_whole_run() -> None:
    series = ar1(np.random.default_rng(1), 900, phi=0.3)
    stop = stop_point(series, RULE)
    assert stop.settled and stop.seconds <= 120, stop
    kept = series[stop.cut : stop.seconds].mean()
    assert abs(kept / series.mean() - 1) * 100 <= RULE.target_ci_pct


def test_a_warm_up_is_waited_out_and_a_drift_runs_longer() -> None:
    rng = np.random.default_rng(2)
    warming = ar1(rng, 900, phi=0.3) * np.minimum(1.0, 0.3 + np.arange(900) / 300)
    stop = stop_point(warming, RULE)
    assert stop.seconds > 210 and stop.cut >= 150, stop  # level from second 210 on
    # 20% lost over the first 200 s (6% a minute), then held: not stopped while it falls,
    # and where it stops its figure is the level it came to.
    drifting = ar1(rng, 900, phi=0.3) * (1 - 0.2 * np.minimum(np.arange(900), 200) / 200)
    ran = stop_point(drifting, RULE)
    assert ran.seconds >= 200 or not ran.settled, ran
    kept = drifting[ran.cut : ran.seconds].mean()
    assert abs(kept / drifting[200:].mean() - 1) * 100 <= 2 * RULE.target_ci_pct, ran


def test_replaying_the_rule_on_a_2026_sized_tree_saves_half_and_changes_no_verdict(
    tmp_path: Path,
) -> None:
    tree_2026(tmp_path / "tree", drifting=0.1)
    assert oltplab("import", "tree", "-r", "imported", cwd=tmp_path).returncode == 0
    done = oltplab("replay", "imported", "--target", "2%", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    with (tmp_path / "imported" / "replay.csv").open() as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == 720
    replayed = json.loads((tmp_path / "imported" / "replay.json").read_text())
    assert replayed["saved_share"] >= 0.5, replayed["saved_share"]
    unsettled = [r for r in rows if r["settled"] == "no"]
    assert all(r["stopped_s"] == r["measured_s"] for r in unsettled)
    # No progression or difference verdict changes that the full cells decided by more than
    # cells known to +-2% can tell (those within are counted, and listed in the json).
    decided = [
        c for c in replayed["changes"]
        if c["what"] in ("progression", "difference") and c["beyond_resolution"]
    ]  # fmt: skip
    assert decided == [], decided
    # plan takes the share replayed there for a matrix of its own.
    spec = Path(__file__).parents[2] / "examples" / "percona-2026.toml"
    planned = oltplab("plan", str(spec), "--stop", "adaptive", "--from", "imported", cwd=tmp_path)
    assert planned.returncode == 0, planned.stdout + planned.stderr
    kept = round(100 * replayed["kept_seconds"] / replayed["measured_seconds"])
    assert f"replayed on imported: cells kept {kept}% of their seconds" in " ".join(
        planned.stdout.split()
    )


def test_warm_ups_replay_by_the_rule_each_its_own_length_the_most() -> None:
    rng = np.random.default_rng(4)
    flat, rising = ar1(rng, 600, phi=0.3), ar1(rng, 180, phi=0.3) * np.linspace(0.5, 1, 180)
    found = replay_warm_ups([flat, rising], RULE)
    assert (found.count, found.measured_seconds) == (2, 780)
    # The flat one ends within a few minutes, the one still rising runs its 180 s.
    assert 180 + 80 <= found.kept_seconds <= 180 + 200, found
