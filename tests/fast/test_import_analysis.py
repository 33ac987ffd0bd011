"""Golden tests: a hand-written tree imports into exact tables, flags and findings."""

import random
from pathlib import Path

import pytest

from oltplab.analysis.dataset import load
from oltplab.analysis.findings import findings
from oltplab.analysis.model import AnalysisOptions, analyse
from oltplab.analysis.points import Points, grids
from oltplab.analysis.tables import differences, progression
from oltplab.base.errors import OltplabError
from oltplab.importers.ingest import import_tree
from oltplab.importers.naming import version_of
from oltplab.importers.scan import scan_tree
from oltplab.report.export import table_rows
from oltplab.store.ledger import Ledger
from tests.support.golden import build_tree
from tests.support.synthetic import sysbench_text

DATA = Path(__file__).parent.parent / "data" / "sysbench"
MYSQL57, MYSQL80, MARIADB = "mysql-5.7.44", "mysql-8.0.45", "mariadb-10.11.16"


@pytest.fixture
def imported(tmp_path):
    tree = build_tree(tmp_path / "benchmark_data")
    ledger = Ledger.open(tmp_path / "results")
    report = import_tree(scan_tree(tree), ledger)
    ledger.close()
    return tmp_path / "results", report, tree


def test_import_counts_and_flags_every_odd_file(imported):
    _results, report, _ = imported
    assert (report.imported, report.updated, report.unchanged) == (19, 0, 0)
    assert sorted(report.flagged) == [
        (f"{MARIADB} ro-local 8G 4 threads", "truncated"),
        (f"{MARIADB} rw-local 2G 4 threads", "empty"),
        (f"{MARIADB} rw-local 8G 4 threads", "errors"),
    ]


def test_reimport_is_idempotent(imported):
    results, _, tree = imported
    before = Ledger.open(results, create=False)
    rows_before = before.cells()
    before.close()
    ledger = Ledger.open(results, create=False)
    again = import_tree(scan_tree(tree), ledger)
    rows_after = ledger.cells()
    ledger.close()
    assert (again.imported, again.updated, again.unchanged) == (0, 0, 19)
    assert rows_after == rows_before


def test_scenario_comes_from_the_directory_and_version_from_its_name(imported):
    results, _, _ = imported
    dataset = load([results])
    assert dataset.scenarios == ["rw-local", "ro-local"]
    assert dataset.engine_names() == [MARIADB, MYSQL57, MYSQL80]
    # no variables file says SELECT VERSION() for it: the folder stands in, said to be one
    assert dataset.engines[MARIADB].server_version_shown == (
        "not recorded (folder 10.11.16-MariaDB-ubu2204)"
    )
    assert version_of("12.1.2-MariaDB-ubu2404") == "12.1.2"
    assert version_of("8.0.45-36") == "8.0.45-36"
    assert dataset.tiers() == ["2G", "8G"]
    assert dataset.variables[(MYSQL80, "8G")]["innodb_redo_log_capacity"] == "4294967296"
    assert dataset.variables[(MYSQL57, "8G")]["innodb_log_files_in_group"] == "2"


def test_tps_grid_by_thread_count(imported):
    points = Points(load([imported[0]]))
    rw8 = next(g for g in grids(points, "tps") if (g.scenario, g.tier) == ("rw-local", "8G"))
    assert rw8.threads == [1, 4]
    values = {engine: [v.whole_run if v else None for v in row] for engine, row in rw8.rows}
    assert values == {MARIADB: [250, 400], MYSQL57: [200, 500], MYSQL80: [190, 620]}
    runs = {engine: [v.runs if v else None for v in row] for engine, row in rw8.rows}
    assert runs[MYSQL80] == [1, 2]
    rw2 = next(g for g in grids(points, "tps") if (g.scenario, g.tier) == ("rw-local", "2G"))
    assert dict(rw2.rows)[MARIADB][1] is None  # the empty file has no number


def test_progression_and_differences(imported):
    dataset = load([imported[0]])
    points = Points(dataset)
    rows = progression(points)
    got = [(r.scenario, r.tier, r.engine, r.threads, round(r.shown_diff_pct, 1)) for r in rows]
    assert got == [
        ("rw-local", "2G", MYSQL80, 1, 10.0),
        ("rw-local", "2G", MYSQL80, 4, -10.0),
        ("rw-local", "8G", MYSQL80, 1, -5.0),
        ("rw-local", "8G", MYSQL80, 4, 24.0),
        ("ro-local", "8G", MYSQL80, 1, 5.0),
        ("ro-local", "8G", MYSQL80, 4, -10.0),
    ]
    assert {r.baseline_engine for r in rows} == {MYSQL57}
    assert [round(r.shown_diff_pct, 1) for r in differences(rows, 5.0)] == [
        10.0,
        -10.0,
        24.0,
        -10.0,
    ]
    _columns, exported = table_rows("progression", analyse(dataset, AnalysisOptions()))
    # Every second of the tree's files holds the same TPS: steady and whole run agree.
    assert exported[3] == {
        "scenario": "rw-local",
        "tier": "8G",
        "family": "mysql",
        "baseline_version": "5.7.44",
        "version": "8.0.45",
        "threads": 4,
        "tps": 620.0,
        "baseline_tps": 500.0,
        "diff_pct": 24.0,
        "ci_low_pct": 24.0,
        "ci_high_pct": 24.0,
        "verdict": "significant",
        "n": 30,
        "method": "long-run variance over seconds",
        "tps_whole_run": 620.0,
        "baseline_tps_whole_run": 500.0,
        "whole_run_diff_pct": 24.0,
        "machines": "",
    }
    with pytest.raises(OltplabError, match="--baseline mysql-9: no such engine"):
        progression(points, ["mysql-9"])
    reversed_rows = progression(points, [MYSQL80])
    assert {r.baseline_engine for r in reversed_rows} == {MYSQL80}


def test_findings_are_computed(imported):
    points = Points(load([imported[0]]))
    got = {
        (f.kind, f.scenario, f.tier, f.engine): (round(f.value, 2), f.detail)
        for f in findings(points)
    }
    assert got[("leader", "rw-local", "2G", MYSQL57)] == (
        300,
        "peak 300 TPS at 4 threads, +11.1% ahead of mysql-8.0.45 (270 TPS)",
    )
    assert got[("leader", "rw-local", "8G", MYSQL80)][0] == 620
    assert got[("leader", "ro-local", "8G", MYSQL57)][0] == 1000
    assert got[("saturation", "rw-local", "2G", MARIADB)][0] == 1
    assert ("collapse", "rw-local", "2G", MARIADB) not in got  # no number at 4 threads
    assert got[("buffer-pool-lever", "rw-local", "8G/2G", MYSQL57)][0] == 1.67
    assert got[("buffer-pool-lever", "rw-local", "8G/2G", MYSQL80)][0] == 2.30
    # mariadb's 8G peak (400 at 4 threads) has the `errors` flag: findings leave it out
    assert got[("buffer-pool-lever", "rw-local", "8G/2G", MARIADB)][0] == 2.08
    with_flagged = {
        (f.kind, f.scenario, f.tier, f.engine): f.value
        for f in findings(points, include_flagged=True)
    }
    assert round(with_flagged[("buffer-pool-lever", "rw-local", "8G/2G", MARIADB)], 2) == 3.33
    assert got[("ro-rw-ratio", "ro/rw-local", "8G", MYSQL57)][0] == 2.0
    assert got[("ro-rw-ratio", "ro/rw-local", "8G", MYSQL80)][0] == 1.45
    assert not [k for k in got if k[0] in ("network-overhead", "close-engines")]


def test_flags_table_lists_every_flagged_cell(imported):
    _columns, rows = table_rows("flags", analyse(load([imported[0]]), AnalysisOptions()))
    assert [(r["scenario"], r["tier"], r["threads"], r["status"], r["flags"]) for r in rows] == [
        ("rw-local", "2G", 4, "failed", "empty"),
        ("rw-local", "8G", 4, "done", "errors"),
        ("ro-local", "8G", 4, "failed", "truncated"),
    ]
    assert rows[0]["reason"] == "empty file"


def test_workload_folders_and_postgresql_import_as_their_own_scenarios(tmp_path):
    recorded = (DATA / "rw_4th.sysbench.txt").read_text()
    tree = tmp_path / "tree"
    for folder in ("benchmark_logs_balanced/postgresql/15.18", "benchmark_logs/mysql/8.0.31"):
        (tree / folder).mkdir(parents=True)
        (tree / folder / "Tier2G_RW_4th.sysbench.txt").write_text(recorded)
    ledger = Ledger.open(tmp_path / "results")
    import_tree(scan_tree(tree), ledger)
    ledger.close()
    dataset = load([tmp_path / "results"])
    assert dataset.scenarios == ["rw-local", "balanced-local"]
    assert {(c.engine, c.family, c.workload) for c in dataset.cells} == {
        ("postgresql-15.18", "postgresql", "balanced"),
        ("mysql-8.0.31", "mysql", "oltp_read_write"),
    }


def _one_repetition_curve(root: Path, top_level: float, spread: float) -> Path:
    """One engine, one repetition per thread count (as the reference's trees have): a
    peak at 4 threads and `top_level` of it at 8, each second within +-spread."""
    rng = random.Random(3)
    folder = root / "tree" / "benchmark_logs" / "mysql" / "8.0.45"
    folder.mkdir(parents=True)
    for threads, level in ((1, 0.5), (4, 1.0), (8, top_level)):
        tps = [1000 * level * rng.uniform(1 - spread, 1 + spread) for _ in range(40)]
        (folder / f"Tier2G_RW_{threads}th.sysbench.txt").write_text(sysbench_text(tps, threads))
    ledger = Ledger.open(root / "results")
    import_tree(scan_tree(root / "tree"), ledger)
    ledger.close()
    return root / "results"


@pytest.mark.parametrize(
    ("top_level", "spread", "said"),
    [(0.6, 0.02, "; steady -40."), (0.96, 0.4, "; not told apart (steady -")],
)
def test_a_collapse_says_whether_the_steady_seconds_tell_it_apart(
    tmp_path: Path, top_level: float, spread: float, said: str
) -> None:
    points = Points(load([_one_repetition_curve(tmp_path, top_level, spread)]))
    [collapse] = [f for f in findings(points) if f.kind == "collapse"]
    assert said in collapse.detail, collapse.detail
