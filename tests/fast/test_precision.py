"""Precision: the stopping rule keeps A/A pairs from ending DIFFERENT under repeated looks
and finds a difference twice the margin; rounds are planned from a host's spread; a
per-transaction cost is weighted by transactions; isolation's CPU split and host advice."""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

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
    rounds_to_decide,
    smallest_decided,
)
from oltplab.base.errors import OltplabError
from oltplab.base.given import parse_duration, parse_percent
from oltplab.base.sizes import duration_text
from oltplab.engines.isolation import CpuSplit, advice
from oltplab.experiments.until_answered import SPENT_EVERY_SECONDS, TimeSpent
from oltplab.spec import parse_spec
from tests.support.cli import oltplab


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
    """The rule as `run --margin` applies it: a look after every round from the third."""
    for k in range(MIN_ROUNDS, rounds + 1):
        _, verdict = decide(first_rounds(a, k), first_rounds(b, k), margin, paired=True)
        if verdict != UNKNOWN:
            return verdict
    return UNKNOWN


def test_an_aa_pair_almost_never_ends_different_however_often_it_is_looked_at():
    rng = np.random.default_rng(7)
    verdicts = [sequential(*paired_rounds(rng, 1.0, 12, 0.02), 3.0, 12) for _ in range(400)]
    assert verdicts.count(DIFFERENT) <= 2  # at most 0.5% of 400
    assert verdicts.count(SAME) > 300


def test_the_planned_rounds_decide_a_difference_of_twice_the_margin():
    spread = 2.0  # percent, each side's session noise: the log ratio spreads sqrt(2) times it
    planned = rounds_needed(spread * np.sqrt(2), 3.0 / 2)
    assert planned is not None and planned > MIN_ROUNDS
    rng = np.random.default_rng(11)
    verdicts = [
        sequential(*paired_rounds(rng, 1.06, planned, spread / 100), 3.0, planned)
        for _ in range(200)
    ]
    assert verdicts.count(DIFFERENT) >= 180
    assert verdicts.count(SAME) == 0
    unchanged = [
        sequential(*paired_rounds(rng, 1.0, planned, spread / 100), 3.0, planned)
        for _ in range(200)
    ]
    assert unchanged.count(SAME) >= 180 and unchanged.count(DIFFERENT) <= 2  # about 0.5%


def test_a_second_or_two_of_a_threefold_jump_hardly_moves_a_round() -> None:
    """At one thread this host now and then runs a second or two three times as fast: a
    round's mean follows, its trimmed mean hardly moves, and an A/A pair judged on
    trimmed rounds stays SAME."""
    rng = np.random.default_rng(5)
    a = {r: rng.normal(500, 15, 10) for r in range(1, 9)}
    b = {r: rng.normal(500, 15, 10) for r in range(1, 9)}
    a[3][4:6] = 1500.0
    a_sample, b_sample = PointSample(a), PointSample(b)
    assert a_sample.rep_mean(3) / b_sample.rep_mean(3) > 1.35
    comparison, verdict = decide(a_sample, b_sample, 3.0, paired=True, trim=0.2)
    assert verdict == SAME, comparison.with_interval()
    assert decide(a_sample, b_sample, 3.0, paired=True)[1] != SAME


def test_rounds_needed_grow_with_the_spread_and_shrink_with_the_margin():
    assert rounds_needed(0.5, 3.0) == MIN_ROUNDS
    found = [rounds_needed(spread, 3.0) for spread in (2.0, 4.0, 8.0)]
    assert found == sorted(found) and found[0] is not None and found[-1] > found[0]  # type: ignore[operator]
    assert rounds_needed(4.0, 2.0) > rounds_needed(4.0, 4.0)  # type: ignore[operator]
    assert rounds_needed(500.0, 0.1, most=50) is None


def test_the_smallest_difference_said_decided_is_decided_four_times_in_five():
    """In simulated paired rounds of the spread given, a true difference of exactly the
    size `smallest_decided` names ends DIFFERENT in about 80% of trials at one look."""
    rng = np.random.default_rng(3)
    spread, margin, rounds = 1.5, 1.0, 12
    size = smallest_decided(spread, margin, rounds)
    assert rounds_to_decide(spread, margin, size) == rounds
    verdicts = []
    for _ in range(400):
        logs = rng.normal(np.log1p(size / 100), spread / 100, rounds)
        a = PointSample({r + 1: np.array([1000 * np.exp(v)]) for r, v in enumerate(logs)})
        b = PointSample({r + 1: np.array([1000.0]) for r in range(rounds)})
        verdicts.append(decide(a, b, margin, paired=True)[1])
    assert 0.70 <= verdicts.count(DIFFERENT) / 400 <= 0.92, verdicts.count(DIFFERENT)
    assert rounds_to_decide(spread, margin, margin) is None  # never beyond its own margin


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
    with pytest.raises(OltplabError, match=r"--margin .*: expected a percentage"):
        parse_percent(text, "--margin")


def test_budgets_read_as_times() -> None:
    assert parse_duration("90s", "--budget") == 90
    assert parse_duration("30m", "--budget") == 1800
    assert parse_duration("2h", "--budget") == 7200
    assert parse_duration("45", "--budget") == 2700  # minutes
    for bad in ("", "soon", "0m", "8d"):
        with pytest.raises(OltplabError, match="expected a time such as"):
            parse_duration(bad, "--budget")


def test_plan_prints_rounds_and_time_from_this_hosts_calibration(tmp_path: Path) -> None:
    quick = (Path(__file__).parents[2] / "examples" / "quick.toml").read_text()
    spec = tmp_path / "interleaved.toml"
    spec.write_text(quick.replace('order = "as-listed"', 'order = "interleaved"'))
    env = {**os.environ, "OLTPLAB_CACHE": str(tmp_path / "cache")}
    bare = oltplab("plan", str(spec), "--margin", "3%", cwd=tmp_path, env=env)
    assert bare.returncode == 2
    assert bare.stderr.strip().splitlines()[-1].startswith("error: --margin: the spec's rounds")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "noise-floor.json").write_text(
        json.dumps(
            {
                platform.node(): {
                    "engine": "mariadb-10.11.5",
                    "noise_floor_pct": 4.0,
                    "round_spread_pct": {"tps": 2.5, "cpu_us_per_txn": 6.0},
                    "cell_seconds": 10,
                    "session_overhead_s": 5.0,
                }
            }
        )
    )
    found = oltplab(
        "plan", str(spec), "--margin", "3%", "--measure", "cpu_us_per_txn",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    text = " ".join(found.stdout.split())
    tps, cpu = rounds_needed(2.5, 1.5), rounds_needed(6.0, 1.5)
    assert tps is not None and cpu is not None and cpu > tps
    assert re.search(rf"tps │ ±2.50% │ {tps} │", text), text
    assert re.search(rf"cpu_us_per_txn \(chosen\) │ ±6.00% │ {cpu} │", text), text
    assert "5 s a session to restore and start" in text
    # Which margin to ask for, from the chosen measure's spread: a 2% question asks 1%.
    assert (
        "Which margin to ask for: server CPU per transaction" in text
        and "e.g. a 2% regression: --margin 1%" in text
    )
    two = rounds_to_decide(6.0, 1.0, 2.0)
    assert two is not None and re.search(rf"│ 1% │ (-|[0-9.]+%) │ {two} rounds,", text), text


@pytest.mark.parametrize(
    ("asked", "planned"), [("as-listed", "sliced"), ("alternating", "alternating")]
)
def test_a_kept_running_order_is_planned_with_a_calibration_of_its_own_rounds(
    tmp_path: Path, asked: str, planned: str
) -> None:
    """Sliced and alternating rounds spread less and cost no restart: an interleaved
    calibration does not plan them, and a round costs its cells, not its warm-ups. A spec
    that asks for no order of rounds is searched, so planned, sliced."""
    quick = Path(__file__).parents[2] / "examples" / "quick.toml"
    spec = tmp_path / "spec.toml"
    spec.write_text(quick.read_text().replace('order = "as-listed"', f'order = "{asked}"'))
    env = {**os.environ, "OLTPLAB_CACHE": str(tmp_path / "cache")}
    (tmp_path / "cache").mkdir()
    entry = {
        "engine": "mariadb-10.11.5",
        "noise_floor_pct": 4.0,
        "round_spread_pct": {"tps": 8.0},
        "cell_seconds": 3,
        "session_overhead_s": 0.5,
    }
    store = tmp_path / "cache" / "noise-floor.json"
    store.write_text(json.dumps({platform.node(): entry}))
    refused = oltplab("plan", str(spec), "--margin", "3%", cwd=tmp_path, env=env)
    assert refused.returncode == 2
    assert f"`oltplab calibrate mysql-5.7.22 --order {planned}`" in refused.stderr
    assert "or pass --calibrate to run it now" in refused.stderr
    store.write_text(json.dumps({platform.node(): entry, f"{platform.node()}/{planned}": entry}))
    found = oltplab("plan", str(spec), "--margin", "3%", cwd=tmp_path, env=env)
    assert found.returncode == 0, found.stderr
    text = " ".join(found.stdout.split())
    assert re.search(rf"tps \(chosen\) │ ±8.00% │ {rounds_needed(8.0, 1.5)} │", text), text
    parsed = parse_spec(spec.read_text(), str(spec))
    sessions = len(parsed.engines) * len(parsed.tier_list) * len(parsed.workloads)
    cells = sessions * len(parsed.protocol.threads)
    per_round = cells * parsed.protocol.measure_seconds + sessions * 0.5
    assert f"One round: {sessions} session(s), {duration_text(per_round)}" in text, text


def test_a_searchs_time_spent_outlives_a_kill_and_a_finished_search_drops_it(tmp_path):
    """The time a search spent, from its process's start, is written down as it goes while
    it holds the results, so a SIGKILL loses at most a few seconds of it; the next search
    goes on from there and, finished, removes it."""
    results = tmp_path / "results"
    started = time.monotonic()
    holding = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path\n"
         "from oltplab.experiments.until_answered import TimeSpent\n"
         "from oltplab.store.lock import ResultsLock\n"
         "with ResultsLock(Path(sys.argv[1])), TimeSpent(Path(sys.argv[1])):\n"
         "    print('on', flush=True); time.sleep(60)",
         str(results)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holding.stdout is not None and holding.stdout.readline().strip() == "on"
    time.sleep(3)
    holding.kill()
    alive = time.monotonic() - started
    holding.communicate()
    with TimeSpent(results) as spent:  # the interpreter's start-up counts too
        assert alive - SPENT_EVERY_SECONDS - 0.5 <= spent.before <= alive
        spent.finished()
    assert not (results / "search.json").exists()


def test_a_damaged_time_spent_is_refused_in_one_line(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('engines = [{name = "mariadb-debian"}, {name = "mariadb-10.11.5"}]\n')
    results = tmp_path / "results"
    results.mkdir()
    (results / "search.json").write_text('{"spent_seconds": -5}\n')
    done = oltplab("run", str(spec), "-r", str(results), "--margin", "3%", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {results / 'search.json'}: expected")
    assert (results / "search.json").read_text() == '{"spent_seconds": -5}\n'


def test_a_budget_is_kept_to_the_second() -> None:
    """`--budget 90s` was rounded to 2 whole minutes (issue 59): it is 90 s now."""
    from oltplab.experiments.measuring import with_precision

    spec = parse_spec('engines = [{name = "mariadb-10.11.5"}]\n', "s.toml")
    assert with_precision(spec, "1", "90s", None).protocol.budget == 90.0
    assert with_precision(spec, "1", "2m", None).protocol.budget == 120.0
    minutes = parse_spec(
        'engines = [{name = "mariadb-10.11.5"}]\n[protocol]\ntarget_ci_pct = 1\n'
        "budget_minutes = 2\n",
        "s.toml",
    )
    assert minutes.protocol.budget == 120.0
    assert with_precision(minutes, None, "45s", None).protocol.budget == 45.0
    with pytest.raises(OltplabError, match="budget_seconds or budget_minutes, not both"):
        parse_spec(
            'engines = [{name = "mariadb-10.11.5"}]\n[protocol]\nbudget_seconds = 90\n'
            "budget_minutes = 2\n",
            "s.toml",
        )


def test_an_interleaved_spec_is_told_to_calibrate_interleaved_rounds(tmp_path: Path) -> None:
    """calibrate's own default order is sliced: the hint names the spec's order, so that
    the calibration it asks for is the one the plan then finds (tests/engine/
    test_calibration.py runs the hint)."""
    quick = Path(__file__).parents[2] / "examples" / "quick.toml"
    spec = tmp_path / "spec.toml"
    spec.write_text(quick.read_text().replace('order = "as-listed"', 'order = "interleaved"'))
    env = {**os.environ, "OLTPLAB_CACHE": str(tmp_path / "cache")}
    refused = oltplab("plan", str(spec), "--margin", "3%", cwd=tmp_path, env=env)
    assert refused.returncode == 2
    assert "`oltplab calibrate mysql-5.7.22 --order interleaved`" in refused.stderr
