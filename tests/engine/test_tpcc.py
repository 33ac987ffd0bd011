"""The TPC-C-like kind on a real engine, from the command line: a load killed with SIGKILL
redone by the next run, never half used; that run's two warehouses loaded once, the second
tier restoring the snapshot; per cell NOPM counted both ways, the mix, the New-Order
rollbacks apart from errors, and the consistency conditions after the cell. One test, so
that the two warehouses are loaded once whole (a minute on a busy day)."""

from __future__ import annotations

import os
import signal
import sqlite3
from pathlib import Path

import pytest

from oltplab.engines.server import SNAPSHOT_MARKER, vault
from tests.support.cli import oltplab, start_oltplab
from tests.support.engines import cells, processes_using, wait_for

# Their subject is the TPC-C-like load itself (counted, killed midway).
pytestmark = pytest.mark.fresh_engines

ENGINE = "mariadb-10.11.5"
# The engine summary (pt-mysql-summary) is no subject here: 2-5 s a session saved.
RUN = ("run", "s.toml", "--results", "out", "--telemetry", "default,-pt-mysql-summary")


def tpcc_spec(warehouses: int, tiers: list[str], measure: int) -> str:
    tier_lines = "".join(f'[[tiers]]\nname = "{t}"\nbuffer_pool = "{t}"\n' for t in tiers)
    return (
        f'workloads = [{{kind = "tpcc"}}]\n[[engines]]\nname = "{ENGINE}"\n{tier_lines}'
        f"[dataset]\nwarehouses = {warehouses}\n"
        "[protocol]\nwarmup_ro_seconds = 0\nwarmup_rw_seconds = 2\nwarmup_threads = 2\n"
        f"measure_seconds = {measure}\nthreads = [2]\n"
        "stop_timeout_seconds = 60\nstart_timeout_seconds = 120\n"
    )


def figures(results: Path) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, tuple]]]:
    db = sqlite3.connect(f"file:{results / 'ledger.sqlite'}?mode=ro", uri=True)
    try:
        metrics: dict[str, dict[str, float]] = {}
        for key, metric, value in db.execute(
            "SELECT c.key, m.metric, m.value FROM cell_metrics m JOIN cells c ON c.id = m.cell_id"
        ):
            metrics.setdefault(key, {})[metric] = value
        types: dict[str, dict[str, tuple]] = {}
        for key, name, *counts in db.execute(
            "SELECT c.key, t.type, t.committed, t.rollbacks, t.retries, t.gave_up"
            " FROM transaction_types t JOIN cells c ON c.id = t.cell_id"
        ):
            types.setdefault(key, {})[name] = tuple(counts)
        return metrics, types
    finally:
        db.close()


def test_a_load_killed_midway_is_loaded_again_and_two_tiers_measure_nopm_on_consistent_data(
    tmp_path,
):
    (tmp_path / "s.toml").write_text(tpcc_spec(2, ["64M", "128M"], measure=5))
    out = tmp_path / "out"
    first = start_oltplab(*RUN, cwd=tmp_path)

    def loading() -> bool:
        found = list((out / ".work").rglob("prepare-tpcc.sysbench.txt"))
        return bool(found) and "loaded 100000 items" in found[0].read_text()

    wait_for(loading, 300, "the load to be under way")
    os.kill(first.pid, signal.SIGKILL)
    first.communicate(timeout=60)
    cnf = str(out / ".work" / ENGINE / "my.cnf")
    wait_for(lambda: not processes_using(cnf), 60, "the engine to die with oltplab")
    assert not (vault(out / ".work" / ENGINE) / SNAPSHOT_MARKER).exists()

    result = oltplab(*RUN, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = cells(out)
    assert [r["tier"] for r in rows] == ["64M", "128M"]
    assert all(r["status"] == "done" and "inconsistent" not in r["flags"] for r in rows)
    # Loaded again, whole, and once; the second tier restored the snapshot.
    loads = list((out / ".work").rglob("prepare-tpcc.sysbench.txt"))
    assert len(loads) == 1
    assert loads[0].read_text().count("oltplab tpcc: loaded warehouse") == 2
    metrics, types = figures(out)
    for row in rows:
        cell = metrics[row["key"]]
        assert cell["nopm"] > 0 and cell["warehouses_active"] == 2
        assert abs(cell["nopm_districts"] / cell["nopm"] - 1) < 0.02
        mix = types[row["key"]]
        assert set(mix) == {"new_order", "payment", "order_status", "delivery", "stock_level"}
        # Rollbacks are New-Orders' alone and never errors; nothing failed here.
        assert all(counts[1] == 0 for name, counts in mix.items() if name != "new_order")
        assert all(counts[3] == 0 for counts in mix.values())
        raw = (out / row["artifact"]).read_text()
        assert all(f"oltplab tpcc: consistency {k} ok" in raw for k in (1, 2, 3, 4))
    # The mix, over both cells: each thread deals whole decks of 23, so the shares are the
    # deck's but for the last, partial deck of each thread.
    ended = {name: sum(sum(t[name][i] for i in (0, 1, 3)) for t in types.values())
             for name in types[rows[0]["key"]]}  # fmt: skip
    total = sum(ended.values())
    assert total > 200, ended
    partial = 2 * 2 * 10 / total  # two threads in two cells, 10 cards of a type at most
    assert abs(ended["new_order"] / total - 10 / 23) <= partial
    assert abs(ended["delivery"] / total - 1 / 23) <= partial
    report = oltplab("report", "out", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    text = (out / "report" / "report.md").read_text()
    assert "Transactions: NOPM, TPM and the mix" in text and "| new_order |" in text
    # What TPC-C users read: NOPM and TPM, efficiency, consistency, avg to max per type.
    terminal = " ".join(result.stdout.split())
    assert "NOPM and TPM" in terminal and "4 conditions held" in terminal
    assert "| efficiency | districts differ by | consistency |" in text
    assert text.count("| 4 conditions held in 1 cell |") == 2  # one row a tier
    assert "| avg ms | p50 ms | p95 ms | p99 ms | p99.9 ms | max ms |" in text
