"""The power curve from trials: the rule replayed at a search's own looks for each margin,
counts with exact intervals, and the A/A false-call bound; the packed file round-trips and a
damaged one is refused in one line."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from oltplab.analysis.power import (
    DIFFERENT,
    SAME,
    UNKNOWN,
    Trial,
    clopper_pearson,
    curve,
    decisions,
    read_trials,
    write_trials,
)
from oltplab.base.errors import OltplabError


def record(number: int, planted: float, rounds: int, spread: float, seed: int) -> dict[str, object]:
    """A trial like bench/power.py's: per-round TPS of base, aa and the planted workload,
    sharing a drifting host level, each with its own round noise of `spread` (log scale)."""
    rng = np.random.default_rng(seed)
    level = 1000 * np.exp(np.cumsum(rng.normal(0, 0.05, rounds)))
    name = f"plus{planted:g}"

    def side(factor: float) -> list[float | None]:
        return [round(float(v), 3) for v in level * factor * np.exp(rng.normal(0, spread, rounds))]

    return {
        "trial": number, "planted_pct": planted, "planted_per_100": 36,
        "started_at": "2026-11-28T10:00:00+00:00", "wall_minutes": rounds * 0.5,
        "exit_status": 0, "waited_for_quiet_minutes": 0.0, "load_before": 0.1,
        "margin_pct": 1.0, "budget_minutes": 15, "look_every": 4, "engine": "mariadb-10.11.5",
        "cell_seconds": 10, "threads": 1, "host": {"hostname": "vm", "cores": 2},
        "measure": "tps", "round_end_minutes": [0.5 * (r + 1) for r in range(rounds)],
        "workloads": {"base": side(1.0), "aa": side(1.0), name: side(1 - planted / 100)},
        "points": {w: f"('{w}-local', '128M', 'mariadb-10.11.5', 1)" for w in ("base", "aa", name)},
        "flagged_rounds": {},
    }  # fmt: skip


def test_a_clear_difference_is_decided_at_the_first_look_and_an_aa_pair_same() -> None:
    trial = Trial.model_validate(record(1, 5, 8, 0.002, seed=1))
    by_size = {d.planted_pct: d for d in decisions(trial, 1.0)}
    assert by_size[5].verdict == DIFFERENT and by_size[5].rounds == 4
    assert by_size[5].minutes == 2.0 and -5.5 < by_size[5].estimate_pct < -4.5
    assert by_size[0].verdict == SAME and by_size[0].rounds == 4


def test_a_search_looks_only_after_each_batch_and_a_margin_it_did_not_reach_is_cut_short() -> None:
    # Noisy rounds: a tight margin is not decided within the rounds the search took.
    trial = Trial.model_validate(record(2, 2, 6, 0.03, seed=2))
    for decision in decisions(trial, 0.5):
        assert decision.rounds in (4, 6)  # looks after the batch of 4, then the last round
        if decision.verdict == UNKNOWN:
            assert decision.cut_short  # its search stopped with budget left


def test_the_curve_counts_each_size_and_bounds_the_aa_false_calls() -> None:
    trials = [Trial.model_validate(record(n, 5, 8, 0.002, seed=n)) for n in range(1, 11)]
    points = {(p.margin_pct, p.planted_pct): p for p in curve(trials, (1.0,))}
    aa, five = points[(1.0, 0.0)], points[(1.0, 5.0)]
    assert (aa.trials, aa.different, aa.same) == (10, 0, 10)
    assert five.different == 10 and five.median_rounds == 4
    # 0 of 10: the one-sided 95% upper bound is 1 - 0.05^(1/10).
    assert aa.upper_bound_different == pytest.approx(1 - 0.05 ** (1 / 10))
    assert clopper_pearson(10, 10)[1] == 1.0 and clopper_pearson(0, 10)[0] == 0.0


def test_the_packed_trials_round_trip_and_a_damaged_file_is_refused(tmp_path: Path) -> None:
    packed = tmp_path / "trials.json.gz"
    write_trials([record(1, 2, 4, 0.01, seed=3)], packed, measured_on="vm")
    (trial,) = read_trials(packed)
    assert trial.planted_pct == 2 and trial.rounds == 4
    packed.write_bytes(gzip.compress(b'{"trials": [{"trial": "one"}]}'))
    with pytest.raises(OltplabError) as caught:
        read_trials(packed)
    assert str(packed) in str(caught.value) and "\n" not in str(caught.value)


def test_the_docs_figure_and_table_are_drawn_from_the_packed_trials(tmp_path: Path) -> None:
    from oltplab.report.power_docs import write_docs

    packed = tmp_path / "trials.json.gz"
    write_trials([record(n, 5, 8, 0.002, seed=n) for n in range(1, 4)], packed, measured_on="vm")
    png, table = write_docs(tmp_path / "docs", packed)
    assert png.read_bytes().startswith(b"\x89PNG")
    said = table.read_text()
    assert "Measured: 3 trials on vm (2 cores, None), 2026-11-28; 0.2 h of machine time" in said
    assert "A/A at ±1%: 0 of 3 DIFFERENT" in said
