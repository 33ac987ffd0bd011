"""Between-session spread: each session's estimate, their spread and the interval across
them; a verdict across builds widened by the spread; the host's spread stored and read."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import numpy as np
import pytest

from oltplab.analysis.equivalence import DIFFERENT, EQUIVALENT, judge
from oltplab.analysis.estimate import PointSample, compare
from oltplab.analysis.sessions import Z90, SessionEstimate, SessionSpread, widened
from oltplab.experiments.session_spread import save, spread_here
from tests.support.cli import oltplab
from tests.support.synthetic import sysbench_text


def session(ratio: float, seed: int) -> SessionEstimate:
    """Eight paired rounds of A against B, A `ratio` times B, with little round noise."""
    rng = np.random.default_rng(seed)
    level = 1000 * np.exp(rng.normal(0, 0.05, 8))
    a = PointSample(
        {r + 1: np.array([level[r] * ratio * (1 + rng.normal(0, 0.002))]) for r in range(8)}
    )
    b = PointSample({r + 1: np.array([level[r] * (1 + rng.normal(0, 0.002))]) for r in range(8)})
    return SessionEstimate(Path(f"s{seed}"), compare(a, b, paired=True, confidence=0.90))


def spread_of(*ratios: float) -> SessionSpread:
    sessions = [session(r, seed) for seed, r in enumerate(ratios)]
    return SessionSpread("B", "A", "ro-local", "128M", 1, sessions)


def test_sessions_that_land_apart_show_a_spread_the_runs_own_intervals_do_not() -> None:
    found = spread_of(0.97, 0.99, 0.95)
    within = max(s.comparison.high_pct - s.comparison.low_pct for s in found.sessions) / 2
    assert within < 0.5  # each run is sure of its own A/B
    assert found.spread_pct == pytest.approx(2.0, abs=0.3)  # but they land 2% apart
    point, low, high = found.across
    # Across sessions, only what three of them allow: about -3%, known to +-3.4%.
    assert point == pytest.approx(-3.0, abs=0.3) and high - low > 6
    said = "\n".join(found.lines())
    assert "between sessions: spread 2.0" in said and "over 3 sessions" in said


def test_a_verdict_across_builds_needs_its_interval_beyond_the_margin_with_the_spread() -> None:
    one = session(0.96, seed=9).comparison  # -4% known to a few tenths within its run
    assert judge(one, 3.0).verdict == DIFFERENT
    wide = widened(one, 1.5)
    assert wide.diff_pct == one.diff_pct
    assert wide.high_pct - one.high_pct == pytest.approx(
        math.sqrt((one.high_pct - one.diff_pct) ** 2 + (Z90 * 1.5) ** 2)
        - (one.high_pct - one.diff_pct)
    )
    assert judge(wide, 3.0).verdict not in (DIFFERENT, EQUIVALENT)  # no longer claimed
    assert widened(one, 0.0) is one


def test_the_hosts_latest_spread_is_stored_and_the_widest_of_it_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLTPLAB_CACHE", str(tmp_path))
    assert spread_here() is None
    save([spread_of(0.97, 0.99, 0.95), spread_of(0.97, 0.971, 0.969)])
    found = spread_here()
    assert found is not None and found.sessions == 3
    assert found.spread_pct == pytest.approx(2.0, abs=0.3)
    assert "3 sessions of B vs A (ro-local, 128M, 1t)" in found.describe()


def two_engines(root: Path, seed: int, b_ratio: float) -> str:
    """A published-style tree: mysql 8.0.45 and 8.0.31 read-write at 4 threads, 5
    repetitions of 30 s; 8.0.31 at `b_ratio` of 8.0.45 in this session."""
    rng = np.random.default_rng(seed)
    for version, ratio in (("8.0.45", 1.0), ("8.0.31", b_ratio)):
        folder = root / f"s{seed}-tree" / "benchmark_logs" / "mysql" / version
        folder.mkdir(parents=True)
        for rep in range(1, 6):
            mean = 1000 * ratio * rng.normal(1, 0.005)
            seconds = rng.normal(mean, mean * 0.01, 30)
            (folder / f"Tier2G_RW_4th_run{rep}.sysbench.txt").write_text(
                sysbench_text(list(seconds), 4)
            )
    done = oltplab("import", f"s{seed}-tree", "-r", f"s{seed}", cwd=root)
    assert done.returncode == 0, done.stderr
    return f"s{seed}"


def test_reproduced_over_three_sessions_prints_and_stores_their_spread(tmp_path: Path) -> None:
    sessions = [two_engines(tmp_path, seed, ratio) for seed, ratio in enumerate((0.97, 0.99, 0.95))]
    env = {**os.environ, "OLTPLAB_CACHE": str(tmp_path / "cache")}
    found = oltplab("reproduced", *sessions, "--margin", "10%", cwd=tmp_path, env=env)
    assert found.returncode in (0, 1, 5), found.stdout + found.stderr
    said = " ".join(found.stdout.split())
    assert "Between sessions, on TPS:" in said
    assert "mysql-8.0.45 vs mysql-8.0.31 (rw-local, 2G, 4t):" in said
    spread = re.search(r"between sessions: spread ([0-9.]+)% over 3 sessions", said)
    assert spread is not None and 1.5 < float(spread.group(1)) < 2.5, said
    assert (tmp_path / "cache" / "session-spread.json").is_file()
