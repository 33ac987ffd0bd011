"""A results directory written by the code before the result model of issue 18 (ledger
schema 4) still reports and exports the same figures: the whole-run numbers sysbench
printed, statuses, flags, findings and per-operation costs are what that code exported;
the steady figures are computed again, each inside its own interval."""

from __future__ import annotations

import csv
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.support.cli import oltplab

FIXTURE = Path(__file__).parent.parent / "data" / "results-v4"
IDENTITY = ("scenario", "engine", "tier", "workload", "threads", "repetition")
# Whole-run columns of the old summary export; its `tps` is the new `tps_whole_run`.
WHOLE_RUN = (
    "status", "qps", "reads_per_s", "writes_per_s", "other_per_s", "lat_avg_ms",
    "lat_p95_ms", "lat_max_ms", "errors_per_s", "reconnects_per_s", "duration_s", "flags",
    "cv", "notes",
)  # fmt: skip


DERIVED_RATES = ("reads_per_s", "writes_per_s", "other_per_s")


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def old_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the fixture, reported and exported by today's code (which migrates it)."""
    root = tmp_path_factory.mktemp("old")
    results = root / "v4"
    shutil.copytree(FIXTURE, results, ignore=shutil.ignore_patterns("expected", "README.md"))
    db = sqlite3.connect(results / "ledger.sqlite")
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "4"
    db.close()
    for table in ("summary", "flags", "operations", "findings"):
        done = oltplab(
            "export", "v4", "--format", "csv", "--table", table, "-o", f"{table}.csv", cwd=root
        )
        assert done.returncode == 0, done.stderr
    report = oltplab("report", "v4", cwd=root)
    assert report.returncode == 0, report.stderr
    return root


def test_whole_run_figures_are_those_the_old_code_exported(old_results: Path) -> None:
    before = {tuple(r[k] for k in IDENTITY): r for r in rows(FIXTURE / "expected/summary.csv")}
    now = {tuple(r[k] for k in IDENTITY): r for r in rows(old_results / "summary.csv")}
    assert now.keys() == before.keys() and len(now) == 8
    for key, old in before.items():
        new = now[key]
        assert new["tps_whole_run"] == old["tps"], key
        assert {c: new[c] for c in WHOLE_RUN if c not in DERIVED_RATES} == {
            c: old[c] for c in WHOLE_RUN if c not in DERIVED_RATES
        }, key
        # Rates derived from sysbench's counts are now rounded as the rates it prints.
        for column in DERIVED_RATES:
            assert float(new[column]) == round(float(old[column]), 2), (key, column)
        # One steady start everywhere: the old 0-based cut is now the first steady second.
        assert int(new["steady_from_s"]) == int(old["steady_from_s"]) + 1
        # The steady figure is computed again, inside its own interval when it has one.
        if new["tps_ci_low"]:
            assert float(new["tps_ci_low"]) <= float(new["tps"]) <= float(new["tps_ci_high"])


@pytest.mark.parametrize("table", ["flags", "operations"])
def test_other_tables_are_unchanged(old_results: Path, table: str) -> None:
    """Every column the old code exported holds what it held (columns added since, such
    as the flags table's error_rate, come beside them)."""
    expected = rows(FIXTURE / "expected" / f"{table}.csv")
    found = rows(old_results / f"{table}.csv")
    assert [{c: r[c] for c in expected[0]} for r in found] == expected


def test_findings_are_the_old_ones_where_the_data_backs_them(old_results: Path) -> None:
    """The old code named a read-only leader from one 2-second run each; its steady
    interval includes no difference, so that leader is now "no clear leader", with the
    interval, and every other finding is what it was."""
    expected = rows(FIXTURE / "expected" / "findings.csv")
    found = rows(old_results / "findings.csv")
    unbacked = [r for r in expected if (r["kind"], r["scenario"]) == ("leader", "ro-local")]
    assert [r for r in found if r["kind"] == "no-leader"] == [
        {**unbacked[0], "kind": "no-leader", "engine": "mariadb-10.11.5 ~ mysql-8.0.31",
         "detail": unbacked[0]["detail"] + "; steady +48.8% [-7.6, +139.6] (95%)"}
    ]  # fmt: skip
    assert [r for r in found if r["kind"] != "no-leader"] == [
        r for r in expected if r not in unbacked
    ]


def test_the_report_shows_the_same_throughput_tables(old_results: Path) -> None:
    def tables(text: str) -> list[str]:
        blocks = text.split("\n\n")
        return [
            "\n\n".join(blocks[i : i + 2])
            for i, block in enumerate(blocks)
            if block.startswith(("**TPS by thread count", "**QPS by thread count"))
        ]

    before = tables((FIXTURE / "expected" / "report.md").read_text())
    now = tables((old_results / "v4" / "report" / "report.md").read_text())
    assert len(before) == 4 and now == before


def test_each_cell_s_cpu_per_transaction_has_its_interval_in_the_summary(
    old_results: Path,
) -> None:
    """One run a point, so each cell's steady CPU per transaction is its point's in the
    operations table; its interval, from the same seconds, holds it (none under 20 s)."""
    key = ("scenario", "engine", "workload", "threads")
    points = {tuple(r[k] for k in key): r for r in rows(old_results / "operations.csv")}
    summary = rows(old_results / "summary.csv")
    assert [r["cpu_us_per_txn"] for r in summary] == [
        points[tuple(r[k] for k in key)]["cpu_us_per_txn"] for r in summary
    ]
    with_interval = [r for r in summary if r["cpu_us_per_txn_ci_low"]]
    assert len(with_interval) == 5, summary
    for r in with_interval:
        low, figure, high = (
            float(r[f"cpu_us_per_txn{end}"]) for end in ("_ci_low", "", "_ci_high")
        )
        assert low <= figure <= high, r
