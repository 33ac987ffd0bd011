"""The adaptive stopping rule on known series, and replayed on 2026-sized trees."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from oltplab.analysis.rule_replay import replay_warm_ups
from oltplab.base.stationarity import Capacities, StateSignal, state_signals, trend
from oltplab.base.stopping_rule import (
    Horizon,
    StopRule,
    batch_means_half_width,
    learned_horizon,
    stop_point,
)
from oltplab.store.ledger import Ledger
from tests.support.archives import unpacked
from tests.support.cli import oltplab
from tests.support.synthetic import tree_2026

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
    # Its last quarter must be long enough for a line through 5% noise to be known to
    # +-4%: about 50 s of it.
    assert stop.settled and stop.seconds <= 300, stop
    kept = series[stop.cut : stop.seconds].mean()
    assert abs(kept / series.mean() - 1) * 100 <= RULE.target_ci_pct


def late_drift(rng: np.random.Generator, change: float) -> np.ndarray:
    """Flat for 350 s, then rising or falling by `change` until 900 s (as the published
    tree's 1-thread read-write cells did)."""
    return ar1(rng, 900, phi=0.3) * (1 + change * np.maximum(0, np.arange(900) - 350) / 550)


def test_a_block_runs_whole_once_and_its_later_repetitions_stop_past_its_drift() -> None:
    """Flat seconds cannot foretell a drift that starts later: the rule alone stops such a
    cell before it and reports a mean that is not the cell's. The block's first repetition
    runs whole, and the later ones stop only from where its mean held."""
    rng = np.random.default_rng(5)
    first, later = late_drift(rng, 0.08), late_drift(rng, 0.08)
    alone = stop_point(later, RULE)
    assert alone.settled and alone.seconds < 350, alone
    whole = later[stop_point(later, StopRule(2.0, 60, 900), Horizon(0, True)).cut :].mean()
    fooled = later[alone.cut : alone.seconds].mean()
    assert abs(fooled / whole - 1) * 100 > RULE.target_ci_pct / 2**0.5, (fooled, whole)

    learning = stop_point(first, RULE, Horizon(0, True))
    assert learning.seconds == 900 and "the first of its block" in learning.describe()
    horizon = Horizon(learned_horizon(first, RULE))
    assert 450 <= horizon.seconds < 900, horizon
    guarded = stop_point(later, RULE, horizon)
    assert guarded.seconds >= horizon.seconds, guarded
    kept = later[guarded.cut : guarded.seconds].mean()
    assert abs(kept / whole - 1) * 100 <= RULE.target_ci_pct, (kept, whole, guarded)
    if guarded.settled:
        assert f"held its mean from {horizon.seconds} s" in guarded.describe()


def test_flat_throughput_with_a_growing_history_list_runs_on_and_says_why() -> None:
    """A transaction held open beside the cell: TPS stays flat while the history list grows
    by a second's transactions every second; the rule does not stop, and says what kept it."""
    tps = ar1(np.random.default_rng(6), 900, phi=0.3)
    growing = {("engine", "history_list_length"): [(s, 50.0 + 1000.0 * s) for s in range(900)]}
    signals = state_signals(growing, 900)
    ran = stop_point(tps, RULE, None, signals)
    assert ran.seconds == 900 and not ran.settled, ran
    assert "history list length rose by" in ran.describe(), ran.describe()
    # The same cell with purge keeping up (a short list wandering) stops as a flat one does.
    rng = np.random.default_rng(7)
    kept_up = {("engine", "history_list_length"): [(s, 50 + rng.normal(0, 7)) for s in range(900)]}
    assert stop_point(tps, RULE, None, state_signals(kept_up, 900)).settled


def test_a_level_counts_against_its_capacity_and_a_short_list_never_counts() -> None:
    """Checkpoint age falling from 8 MB to 6 MB of a 256 MB redo is no trend; a buffer pool
    still filling (free pages falling by a fifth of it) is; a history list going from 5 to 0
    (purge catching up after a warm-up) is purge keeping up, not a trend."""
    seconds = np.arange(600)
    telemetry = {
        ("engine", "checkpoint_age"): [(int(s), 8e6 - 2e6 * s / 600) for s in seconds],
        ("engine", "Innodb_buffer_pool_pages_free"): [(int(s), 30000 - 13 * s) for s in seconds],
        ("engine", "Innodb_buffer_pool_pages_data"): [(int(s), 35536 + 13 * s) for s in seconds],
        ("engine", "history_list_length"): [(int(s), 5.0 if s < 60 else 0.0) for s in seconds],
    }
    capacities = Capacities.of({"innodb_redo_log_capacity": str(256 * 2**20)})
    found = {s.name: trend(s, 0, 600, tps=300.0) for s in state_signals(telemetry, 600, capacities)}
    assert found["checkpoint age"] is None
    assert found["history list length"] is None
    free = found["free buffer pool pages"]
    assert free is not None and free.describe().startswith(
        "free buffer pool pages fell by 12% of the buffer pool's pages"
    ), free
    # Without the redo's capacity, its own level is the scale: a quarter lower is a trend.
    alone = state_signals(telemetry, 600)
    assert trend(next(s for s in alone if s.name == "checkpoint age"), 0, 600, 300.0)
    assert isinstance(alone[0], StateSignal)


def test_postgresql_checkpoints_count_until_the_window_holds_several() -> None:
    """PostgreSQL's checkpoint age (WAL since the redo point) climbs to a third of
    max_wal_size and drops at each 300 s checkpoint, and the checkpoints' writes follow it: a
    window shorter than a checkpoint interval sees a trend in both; the age shows none only
    once even the last quarter of the window holds more than one interval."""
    seconds = np.arange(900)
    rng = np.random.default_rng(8)
    telemetry = {
        ("engine", "checkpoint_age"): [(int(s), 1.2e6 * (s % 300)) for s in seconds],
        ("engine", "pg_stat_bgwriter.buffers_checkpoint"): [
            (int(s), 40.0 + (s % 300) / 3 + rng.normal(0, 3)) for s in seconds
        ],
        ("engine", "pg_stat_bgwriter.buffers_backend"): [(int(s), 5.0) for s in seconds],
    }
    capacities = Capacities.of({"max_wal_size": str(2**30)})
    signals = {s.name: s for s in state_signals(telemetry, 900, capacities)}
    assert set(signals) == {"checkpoint age", "buffers written a second"}, signals
    age, written = signals["checkpoint age"], signals["buffers written a second"]
    assert age.scale == 2**30
    for signal in (age, written):
        early = trend(signal, 20, 260, tps=500.0)
        assert early is not None and early.change > 0, signal.name
    # At 900 s the last quarter is shorter than one checkpoint interval and still rises.
    whole = trend(age, 0, 900, tps=500.0)
    assert whole is not None and whole.seconds == 225, whole
    longer = {("engine", "checkpoint_age"): [(int(s), 1.2e6 * (s % 300)) for s in range(1800)]}
    (age,) = state_signals(longer, 1800, capacities)
    assert trend(age, 0, 1800, tps=500.0) is None


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
    """One repetition a cell, as published: each cell is the first of its block and runs
    whole, and the replay says why nothing is saved; the rule alone (--horizon none) saves
    half of series that settle as these do, and changes no verdict."""
    tree_2026(tmp_path / "tree", drifting=0.1)
    assert oltplab("import", "tree", "-r", "imported", cwd=tmp_path).returncode == 0
    learned = oltplab("replay", "imported", "--resolution", "2%", cwd=tmp_path)
    assert learned.returncode == 0, learned.stdout + learned.stderr
    said = " ".join(learned.stdout.split())
    assert "Every block here ran once: each cell is the first of its block and runs whole" in said
    replayed = json.loads((tmp_path / "imported" / "replay.json").read_text())
    assert (replayed["saved_share"], replayed["learning"]) == (0.0, 720), replayed["learning"]
    assert replayed["later_kept_share"] is None

    done = oltplab("replay", "imported", "--resolution", "2%", "--horizon", "none", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    with (tmp_path / "imported" / "replay.csv").open() as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == 720
    replayed = json.loads((tmp_path / "imported" / "replay.json").read_text())
    assert replayed["saved_share"] >= 0.5, replayed["saved_share"]
    unsettled = [r for r in rows if r["settled"] == "no"]
    assert all(r["stopped_s"] == r["measured_s"] for r in unsettled)
    # Per workload class: scenario and tier, 3 x 3 of them.
    assert len(replayed["classes"]) == 9, replayed["classes"]
    # No progression or difference verdict changes that the full cells decided by more than
    # cells known to +-2% can tell (those within are counted, and listed in the json).
    decided = [
        c for c in replayed["changes"]
        if c["what"] in ("progression", "difference") and c["beyond_resolution"]
    ]  # fmt: skip
    assert decided == [], decided


def test_late_drifts_fool_the_rule_alone_but_not_a_learned_horizon(tmp_path: Path) -> None:
    """Two repetitions of the 2026 matrix at three of its thread counts (every engine, tier
    and scenario: 270 blocks), two fifths of its blocks flat for 350 s and then drifting by
    8%: the rule alone stops their cells before the drift, and their means move by more
    than the target; with the horizon learned on each block's first repetition, no mean
    moves that far, no verdict changes, the later repetitions keep a share of their
    seconds, and plan --from takes that share. (The whole 2026 size is replayed above.)"""
    tree_2026(tmp_path / "tree", repetitions=2, late_drifting=0.4, threads=(1, 16, 128))
    assert oltplab("import", "tree", "-r", "imported", cwd=tmp_path).returncode == 0
    moved = {}
    for horizon in ("none", "learned"):
        done = oltplab("replay", "imported", "--horizon", horizon, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        replayed = json.loads((tmp_path / "imported" / "replay.json").read_text())
        moved[horizon] = max(c["largest_move_pct"] for c in replayed["classes"])
    assert moved["none"] > 2 * 2.0, moved
    assert moved["learned"] <= 2.0, moved
    assert [c for c in replayed["changes"] if c["beyond_resolution"]] == []
    assert replayed["learning"] == 270 and replayed["later_kept_share"] < 0.8, replayed
    said = " ".join(done.stdout.split())
    assert "270 cell(s) ran whole as the first of their block; the others kept" in said
    spec = Path(__file__).parents[2] / "examples" / "percona-2026.toml"
    planned = oltplab("plan", str(spec), "--stop", "adaptive", "--from", "imported", cwd=tmp_path)
    assert planned.returncode == 0, planned.stdout + planned.stderr
    later = round(100 * replayed["later_kept_share"])
    said = " ".join(planned.stdout.split())
    assert f"repetitions after the first of their block kept {later}% of their seconds" in said
    judged = replayed["verdicts_judged"]
    assert judged > 0, replayed
    assert f"verdicts that share changed in its replay: none of {judged} beyond its" in said


def test_warm_ups_replay_by_the_rule_each_its_own_length_the_most() -> None:
    rng = np.random.default_rng(4)
    flat, rising = ar1(rng, 600, phi=0.3), ar1(rng, 180, phi=0.3) * np.linspace(0.5, 1, 180)
    found = replay_warm_ups([flat, rising], RULE)
    assert (found.count, found.measured_seconds) == (2, 780)
    # The flat one ends within a few minutes (once its last quarter is long enough to
    # show no line), the one still rising runs its 180 s.
    assert 180 + 80 <= found.kept_seconds <= 180 + 400, found


def test_replay_tries_the_rule_the_run_s_spec_gave_unless_told_otherwise(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    run = unpacked("run-w10.tar.xz", tmp_path_factory, "run")
    ledger = Ledger.open(run)
    try:
        spec = ledger.meta("spec")
        assert spec is not None
        ledger.set_meta("spec", spec + "stop_target_pct = 4.0\nstop_min_seconds = 30\n")
    finally:
        ledger.close()
    recorded = oltplab("replay", str(run), cwd=run.parent)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    said = " ".join(recorded.stdout.split())
    assert "known to ±4% (95%), not before 30 s" in said, said
    given = oltplab("replay", str(run), "--resolution", "3%", cwd=run.parent)
    assert "known to ±3% (95%), not before 30 s" in " ".join(given.stdout.split())
