import json
import re
from pathlib import Path

import oltplab as oltplab_package
from oltplab.plan import (
    Scenario,
    build_plan,
    cells_of,
    plan_seconds,
    starting,
)
from oltplab.plan.lengths import CORPUS_FILE
from oltplab.spec import parse_spec
from oltplab.store.directory import cell_stem, scenario_dir
from tests.support.cli import oltplab

SPEC = """
engines = [{name = "mysql-8.0.31"}, {name = "mariadb-10.11.5"}]
workloads = ["oltp_read_write", "oltp_read_only"]
[[tiers]]
name = "2G"
buffer_pool = "2G"
[[tiers]]
name = "4G"
buffer_pool = "4G"
[protocol]
threads = [1, 8]
repetitions = 2
"""


def plan(order: str, seed: int = 0):
    return build_plan(parse_spec(SPEC + f'order = "{order}"\nseed = {seed}\n', "t.toml"))


def test_every_cell_appears_once_whatever_the_order():
    for order in ("as-listed", "interleaved", "alternating", "random"):
        keys = [cell.key for cell in cells_of(plan(order))]
        assert len(keys) == len(set(keys)) == 2 * 2 * 2 * 2 * 2


def test_as_listed_runs_one_session_per_engine_tier_workload():
    sessions = plan("as-listed")
    assert [(s.engine, s.tier, s.workload) for s in sessions][:3] == [
        ("mysql-8.0.31", "2G", "oltp_read_write"),
        ("mysql-8.0.31", "2G", "oltp_read_only"),
        ("mysql-8.0.31", "4G", "oltp_read_write"),
    ]
    assert [(c.threads, c.repetition) for c in sessions[0].cells] == [
        (1, 1),
        (1, 2),
        (8, 1),
        (8, 2),
    ]


def test_interleaved_alternates_engines_within_each_round_and_who_goes_first():
    sessions = plan("interleaved")
    assert [s.engine for s in sessions[:4]] == ["mysql-8.0.31", "mariadb-10.11.5"] * 2
    assert {c.repetition for s in sessions[:8] for c in s.cells} == {1}
    assert {c.repetition for s in sessions[8:] for c in s.cells} == {2}
    assert [s.engine for s in sessions[8:12]] == ["mariadb-10.11.5", "mysql-8.0.31"] * 2


def test_alternating_rounds_are_interleaved_and_warm_up_each_engine_once_per_tier():
    """Its cells run in the interleaved order; a session finding its engine already running
    (the same tier) costs its cells only."""
    alternating, interleaved = plan("alternating"), plan("interleaved")
    assert [s.cells for s in alternating] == [s.cells for s in interleaved]
    spec = parse_spec(SPEC + 'order = "alternating"\n', "t.toml")
    starts = starting(spec, alternating)
    assert sum(starts) == 2 * 2  # engines x tiers
    cells = {c.key for s in alternating for c in s.cells}
    measured = len(cells) * spec.protocol.measure_seconds
    warmups = spec.protocol.warmup_ro_seconds + spec.protocol.warmup_rw_seconds
    assert plan_seconds(spec, alternating, cells) == measured + 4 * warmups


def test_random_order_is_reproducible_from_its_seed():
    same = [s.cells[0].key for s in plan("random", 7)]
    assert same == [s.cells[0].key for s in plan("random", 7)]
    assert same != [s.cells[0].key for s in plan("random", 8)]


def test_scenarios_and_artifact_names_follow_the_2026_layout():
    cells = cells_of(plan("as-listed"))
    rw = next(c for c in cells if c.workload == "oltp_read_write" and c.repetition == 1)
    ro = next(c for c in cells if c.workload == "oltp_read_only" and c.repetition == 2)
    assert (rw.scenario, ro.scenario) == (Scenario("oltp_read_write"), Scenario("oltp_read_only"))
    assert (rw.scenario.name, ro.scenario.name) == ("rw-local", "ro-local")
    assert cell_stem(rw, read_only=False) == "Tier2G_RW_1th"
    assert cell_stem(ro, read_only=True) == "run2_Tier2G_RO_1th"
    assert scenario_dir("oltp_read_write") == "benchmark_logs"
    assert scenario_dir("oltp_read_only") == "benchmark_logs_read_only"
    assert scenario_dir("oltp_point_select") == "benchmark_logs_oltp_point_select"


def test_a_scenario_is_its_fields_and_its_name_only_labels_them():
    over_network = Scenario("balanced", network=True)
    assert over_network.name == "balanced-network"
    assert over_network.local == Scenario("balanced")
    assert Scenario("oltp_read_write", network=True).name == "rw-network"
    assert Scenario("oltp_read_write").reference and not over_network.reference


def test_groups_are_repeated_until_their_spread_is_small_enough():
    from oltplab.plan import needing_more

    tps = {
        "steady": [100.0, 101.0, 99.0],
        "noisy": [100.0, 130.0, 70.0],
        "once": [100.0],
        "capped": [100.0, 200.0, 50.0, 150.0],
    }
    assert needing_more(tps, target_cv=0.03, max_repetitions=4) == {"noisy", "once"}


def test_an_extra_round_repeats_only_what_needs_it_with_engines_interleaved():
    from oltplab.plan import extra_round

    sessions = plan("as-listed")
    mysql_1t = next(
        c
        for c in cells_of(sessions)
        if c.engine == "mysql-8.0.31"
        and c.tier == "4G"
        and c.workload == "oltp_read_only"
        and c.threads == 1
    )
    maria_8t = next(
        c
        for c in cells_of(sessions)
        if c.engine == "mariadb-10.11.5"
        and c.tier == "4G"
        and c.workload == "oltp_read_only"
        and c.threads == 8
    )
    round_ = extra_round(
        sessions, {mysql_1t.group, maria_8t.group}, {mysql_1t.group: 3, maria_8t.group: 5}
    )
    assert [(s.engine, [(c.threads, c.repetition) for c in s.cells]) for s in round_] == [
        ("mysql-8.0.31", [(1, 3)]),
        ("mariadb-10.11.5", [(8, 5)]),
    ]
    # in a second round the other engine goes first
    second = extra_round(
        sessions, {mysql_1t.group, maria_8t.group}, {mysql_1t.group: 2, maria_8t.group: 2}
    )
    assert [s.engine for s in second] == ["mariadb-10.11.5", "mysql-8.0.31"]


def test_plan_at_small_scale_counts_setup_and_overheads_and_says_slower_when_it_is():
    """The demo (8 cells of 6 s) takes about 2-3 minutes on this machine: the estimate
    counts engine setup, restarts and sysbench's starts, in minutes and seconds; more
    shards than the work needs are said to be slower, never "0.2x faster"."""
    demo = str(Path(oltplab_package.__file__).parent / "spec" / "demo.toml")
    said = " ".join(oltplab("plan", demo, cwd=Path.cwd()).stdout.split())
    found = re.search(r"one machine: about (\d+)m (\d\d)s", said)
    assert found and 90 <= int(found[1]) * 60 + int(found[2]) <= 240, said
    many = " ".join(oltplab("plan", demo, "--shards", "8", cwd=Path.cwd()).stdout.split())
    assert re.search(r"\dx (faster|slower)", many) and not re.search(r" 0\.\dx faster", many)


def _hours(text: str) -> float:
    """`1d 2h 55m`, `9h 12m` or `45m` in hours."""
    units = {"d": 24.0, "h": 1.0, "m": 1 / 60, "s": 1 / 3600}
    return sum(int(n) * units[u] for n, u in re.findall(r"(\d+)([dhms])", text))


def test_plan_with_adaptive_cells_says_its_basis_beside_the_fixed_length_figure(tmp_path):
    """Three repetitions of the 2026 matrix on 20 machines: each block's first repetition
    runs whole and the later ones are expected to keep the most conservative share measured
    on the long-cell corpus, said to be assumed, with the verdicts it changed there; blocks
    are dealt by those lengths, and the fixed-length plan is printed beside."""
    spec = str(Path(__file__).parents[2] / "examples" / "percona-2026.toml")
    args = ("plan", spec, "--shards", "20", "--repetitions", "3", "--stop", "adaptive")
    done = oltplab(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    said = " ".join(done.stdout.split())
    corpus = json.loads(CORPUS_FILE.read_text())
    later = corpus["later_kept_share"]
    expected = max(round(900 * (1 + 2 * later) / 3), 80)
    assert f"adaptive cells: about {expected} s of 900 s" in said, said
    assert (
        "(assumed, not measured on this host: repetitions after the first of their block keep "
        f"{later:.0%} of their seconds, as in {corpus['most_conservative_class']}, the most "
        "conservative workload class of the long-cell corpus (bench/corpus:"
    ) in said
    assert "verdicts that share changed in its replay: " in said
    adaptive = re.search(r"┘ one machine: .*?; 20 shards: ([\dhdm ]+?) \(the longest", said)
    fixed = re.search(r"fixed-length cells: one machine: .*?; 20 shards: ([\dhdm ]+?) \(", said)
    assert adaptive and fixed, said
    assert _hours(adaptive[1]) <= _hours(fixed[1]), (adaptive[1], fixed[1])
    assert "prepare: each engine's dataset prepared once, by the first shard to reach it" in said
    assert "(assumed: 100,000 rows prepared a second, 260 bytes a row, snapshots copied at" in said
    # Nothing replayed there yet: said how to make it, in one line.
    missing = oltplab(*args, "--from", "nowhere", cwd=tmp_path)
    assert missing.returncode == 2
    assert "nowhere/replay.json: not found; run oltplab replay nowhere first" in missing.stderr
    fixed_from = oltplab("plan", spec, "--from", "nowhere", cwd=tmp_path)
    assert fixed_from.returncode == 2 and "add --stop adaptive" in fixed_from.stderr


def test_plan_refuses_an_unknown_dimension_and_a_shard_count_beyond_any_cluster(tmp_path):
    spec = str(Path(__file__).parents[2] / "examples" / "quick.toml")
    colour = oltplab("plan", spec, "--block", "colour", cwd=tmp_path)
    assert colour.returncode == 2, colour.stderr
    assert colour.stderr.strip().splitlines() == [
        "error: --block colour: colour is not a dimension; expected some of placement, tier, "
        "workload, threads, comma-separated (engines and repetitions are never cut)"
    ]
    many = oltplab("plan", spec, "--shards", "100000000", cwd=tmp_path, timeout=60)
    assert many.returncode == 2 and "10000" in many.stderr, many.stderr


def test_shards_sharing_a_store_prepare_each_dataset_once_starting_from_different_engines():
    from oltplab.plan.preparing import (
        copy_seconds,
        prepare_seconds,
        preparing_order,
        shared_prepare_seconds,
    )

    engines = ["a", "b", "c"]
    assert [preparing_order(engines, k) for k in (1, 2, 3, 4)] == [
        ["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]
    ]  # fmt: skip
    spec = parse_spec(SPEC, "t.toml")
    prepare, copy = prepare_seconds(spec, 1), copy_seconds(spec)
    # Two shards, two engines: each prepares (and publishes) one while the other prepares
    # the other one, then copies that.
    two = ["mysql-8.0.31", "mariadb-10.11.5"]
    assert shared_prepare_seconds(spec, [two, two]) == [prepare + 2 * copy] * 2
    # Both start with the canary's engine: one prepares it while the other waits, then
    # copies it; the other engine is prepared by the shard that reaches it first (the one
    # that did not wait) and copied by the other.
    first = shared_prepare_seconds(spec, [two, two], first="mysql-8.0.31")
    assert first == [2 * prepare + 2 * copy, 2 * prepare + 3 * copy]
    # Three shards on three engines: the first wave prepares all three at once.
    three = [engines] * 3
    assert shared_prepare_seconds(spec, three) == [prepare + 3 * copy] * 3
    assert prepare + 3 * copy < prepare_seconds(spec, 3)
