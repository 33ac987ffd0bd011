"""A results site over 30 results directories (28 imported nightly trees, two short real
runs) in a real Chromium: no console error, no network request, every run listed, and the
history page of one point showing every run with its interval and the planted change.

The two real runs are kept in tests/data/site-real-runs.tar.xz (see tests/data/README.md):
`oltplab run` of a tiny spec on MariaDB 10.11.5 (one 2-thread read-write cell of 3 s,
--no-telemetry), twice, on the project's machine; only what a results directory needs is
packed (no `.work`), so this test starts no engine."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from oltplab.importers.ingest import import_tree
from oltplab.importers.scan import scan_tree
from oltplab.store.ledger import Ledger
from tests.support.archives import unpacked
from tests.support.browser import CHROMIUM, requests_beyond_files
from tests.support.cli import oltplab
from tests.support.engines import cells
from tests.support.trees import tree

NIGHTS = 28
CHANGED_FROM = 15  # the night from which 16 threads lose 20%


def test_a_site_over_thirty_runs_opens_offline_and_marks_the_change(
    tmp_path, tmp_path_factory, browser_page
):
    assert Path(CHROMIUM).exists()
    for night in range(1, NIGHTS + 1):
        slower = {16: 0.2} if night >= CHANGED_FROM else None
        tree(tmp_path / f"tree{night}", night, slower, threads=(16,), repetitions=3)
        ledger = Ledger.open(tmp_path / f"night{night:02d}")
        import_tree(scan_tree(tmp_path / f"tree{night}"), ledger)
        ledger.close()
        # Imported within seconds of each other; nightly runs are a day apart.
        with sqlite3.connect(tmp_path / f"night{night:02d}" / "ledger.sqlite") as db:
            day = f"2026-10-{night:02d}T02:00:00+00:00"
            db.execute("UPDATE runs SET started_at = ?", (day,))
    archived = unpacked("site-real-runs.tar.xz", tmp_path_factory, "real")
    for name in ("real1", "real2"):
        shutil.move(archived / name, tmp_path / name)
        [cell] = cells(tmp_path / name)
        assert cell["status"] == "done" and cell["engine"] == "mariadb-10.11.5"
    everything = [f"night{n:02d}" for n in range(NIGHTS, 0, -1)] + ["real2", "real1"]
    built = oltplab("site", *everything, "-o", "site", cwd=tmp_path, timeout=900)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "site/index.html: 30 run(s)" in " ".join(built.stdout.split())

    page, errors = browser_page
    requested = requests_beyond_files(page)
    page.goto((tmp_path / "site" / "index.html").as_uri())
    listed = page.locator("#runs tbody tr td:first-child").all_inner_texts()
    assert listed == ["real2", "real1", *(f"night{n:02d}" for n in range(NIGHTS, 0, -1))]
    page.locator("a", has_text="Engines side by side").click()
    side = page.locator("#engines thead th").all_inner_texts()
    assert side == ["scenario", "tier", "threads", "mariadb-10.11.5", "mysql-8.0.45"], side
    row = page.locator("#engines tbody tr", has_text="16").first.inner_text()
    assert f"(night{NIGHTS:02d})" in row, row  # the latest night's figure
    page.go_back()
    page.locator("#histories a", has_text="mysql-8.0.45/rw-local/2G/16t").click()
    page.wait_for_selector("#chart .main-svg")
    chart = page.evaluate(
        "(() => { const c = document.getElementById('chart');"
        " return {x: c.data[0].x, bars: c.data[0].error_y.array, shapes: c.layout.shapes}; })()"
    )
    assert chart["x"] == [f"night{n:02d}" for n in range(1, NIGHTS + 1)]
    assert all(bar > 0 for bar in chart["bars"])  # every run with its interval
    assert len(chart["shapes"]) == 1 and chart["shapes"][0]["x0"] == CHANGED_FROM - 1.5
    said = page.locator("#changes").inner_text()
    assert f"between night{CHANGED_FROM - 1:02d} and night{CHANGED_FROM:02d}" in said, said
    assert page.locator("#rows tbody tr").count() == NIGHTS
    # each run's own report opens from its row, offline too
    page.locator("#rows tbody tr").first.locator("a", has_text="report").click()
    page.wait_for_selector("#chart .main-svg")
    assert requested == [] and errors == []
