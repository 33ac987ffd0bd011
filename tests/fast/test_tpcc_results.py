"""A real TPC-C-like precision search, read back: MySQL 8.0.31 against MariaDB 10.11.5 (W =
2, 1 and 4 threads, four sliced rounds of 20 s), its ledger, journal, run.json and raw
outputs kept in tests/data/tpcc-precision.tar.xz (`oltplab run SPEC --margin 3%
--budget 20m` on the project's machine). NOPM is judged from the kind's own per-second
series; a rebuilt ledger reads the kind's figures again from the raw outputs; the export
gives one row per cell and transaction type."""

from __future__ import annotations

import csv
import io
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from oltplab.analysis.dataset import load
from oltplab.analysis.points import Points
from oltplab.analysis.precision import DIFFERENT, answers
from oltplab.base.metrics import NEW_ORDERS, NOPM, NOPM_MEASURE, Target
from tests.support.archives import unpacked
from tests.support.cli import oltplab


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return unpacked("tpcc-precision.tar.xz", tmp_path_factory, "precision")


def test_nopm_comparisons_are_judged_on_the_new_orders_of_each_second(results: Path) -> None:
    points = Points(load([results]), measure=NOPM_MEASURE)
    samples = points.samples()
    assert len(samples) == 4 and all(len(s.series) == 4 for s in samples.values())
    # Each second's value is its committed New-Orders times 60; the seconds of a cell add
    # up to the New-Orders its transaction types say it committed.
    for cell in points.dataset.cells:
        series = samples[("tpcc-local", "512M", cell.engine, cell.threads)].series
        assert np.all(series[cell.repetition] % 60 == 0)
        per_second = points.dataset.telemetry[cell.key][NEW_ORDERS]
        assert cell.kind_results is not None and cell.metric(NOPM)
        [new_order] = [t for t in cell.kind_results.transactions if t.name == "new_order"]
        assert sum(value for _, value in per_second) == new_order.committed
    found = answers(points, Target(3.0, NOPM_MEASURE))
    assert [(a.a[2], a.b[2], a.a[3], a.verdict) for a in found] == [
        ("mysql-8.0.31", "mariadb-10.11.5", 1, DIFFERENT),
        ("mysql-8.0.31", "mariadb-10.11.5", 4, DIFFERENT),
    ]
    assert all(a.comparison is not None and a.comparison.estimate.point < -20 for a in found)


def kind_rows(ledger: Path) -> list[tuple]:
    db = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
    try:
        return sorted(
            db.execute(
                "SELECT c.key, t.type, t.committed, t.rollbacks, t.retries, t.gave_up"
                " FROM transaction_types t JOIN cells c ON c.id = t.cell_id"
            )
        ) + sorted(
            db.execute(
                "SELECT c.key, m.metric, round(m.value, 6) FROM cell_metrics m"
                " JOIN cells c ON c.id = m.cell_id"
            )
        )
    finally:
        db.close()


def test_a_rebuilt_ledger_reads_the_kind_s_figures_again(results: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(results, copy)
    (copy / "ledger.sqlite").unlink()
    rebuilt = oltplab("rebuild", "copy", cwd=tmp_path)
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    before, after = kind_rows(results / "ledger.sqlite"), kind_rows(copy / "ledger.sqlite")
    assert len(before) == 16 * 5 + 16 * 6 and after == before  # 5 types, 6 figures a cell


def test_the_transactions_export_has_a_row_per_cell_and_type(results: Path) -> None:
    done = oltplab("export", str(results), "--table", "transactions", "--format", "csv",
                   cwd=results)  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert len(rows) == 16 * 5
    assert {r["type"] for r in rows} == {
        "new_order", "payment", "order_status", "delivery", "stock_level",
    }  # fmt: skip
    for row in rows:
        assert float(row["nopm"]) == pytest.approx(float(row["nopm_districts"]))
        assert row["warehouses_active"] in ("1.0", "2.0")
        # What go-tpc prints beside tpmC: tpmTotal, efficiency, and per type avg to max.
        assert float(row["tpm"]) > float(row["nopm"])
        assert float(row["efficiency_pct"]) == pytest.approx(
            100 * float(row["nopm"]) / (12.86 * float(row["warehouses_active"])), rel=1e-4
        )
        times = [float(row[c]) for c in ("service_avg_ms", "service_p50_ms", "service_max_ms")]
        assert 0 < times[1] <= times[2] and times[0] <= times[2]
        assert float(row["service_p99_ms"]) <= float(row["service_p99.9_ms"]) <= times[2]
        assert (row["consistency_checked"], row["consistency_failed"]) == ("4", "0")
    shares = [float(r["share_pct"]) for r in rows if r["type"] == "new_order"]
    assert all(abs(share - 100 * 10 / 23) < 1 for share in shares)
