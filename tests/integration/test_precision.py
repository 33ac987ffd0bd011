"""Precision on a shared machine, with real engines: other load is seen and a disturbed
cell is measured again; paired rounds go on until each comparison is decided; isolation
puts the server and sysbench on CPUs of their own."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oltplab.analysis.dataset import load
from oltplab.analysis.model import AnalysisOptions, analyse
from oltplab.store.ledger import Ledger
from tests.integration.conftest import cells, spec_text, start_oltplab, wait_for

pytestmark = pytest.mark.engine

ENGINE = "mariadb-10.11.5"
BURN = "import time\nt = time.time()\nwhile time.time() - t < {seconds}: pass\n"


def test_other_load_is_flagged_shaded_and_measured_again(tmp_path: Path) -> None:
    """A process that is not oltplab's loads a CPU for part of a cell: the cell is flagged
    interference with the figure and its seconds are shaded; --rerun-disturbed measures it
    again without the load, keeping the disturbed result aside."""
    spec = tmp_path / "spec.toml"
    spec.write_text(spec_text([ENGINE], threads=[1], measure=14, workloads=("oltp_read_only",)))
    results = tmp_path / "results"
    run = start_oltplab("run", str(spec), "-r", str(results), cwd=tmp_path)
    # The load starts once the cell is being measured, and covers about half of it.
    wait_for(lambda: any(row["status"] == "running" for row in cells(results)), 240, "the cell")
    time.sleep(3)
    burner = subprocess.Popen([sys.executable, "-c", BURN.format(seconds=7)])
    output, _ = run.communicate(timeout=300)
    burner.wait()
    assert run.returncode == 0, output
    (row,) = cells(results)
    assert "interference" in row["flags"].split(","), row["notes"]
    assert "interference" in row["notes"] and "steady s" in row["notes"]
    analysis = analyse(load([results]), AnalysisOptions())
    (timeline,) = analysis.timelines.values()
    shaded = sum(last - first + 1 for first, last in timeline.disturbed)
    assert 4 <= shaded <= 9, timeline.disturbed
    assert any(panel.title == "CPUs used" for panel in timeline.panels)

    again = start_oltplab("run", str(spec), "-r", str(results), "--rerun-disturbed", cwd=tmp_path)
    output, _ = again.communicate(timeout=300)
    assert again.returncode == 0, output
    (row,) = cells(results)
    assert row["status"] == "done"
    assert "interference" not in row["flags"].split(","), row["notes"]
    ledger = Ledger.open(results, create=False, journal=False)
    try:
        (kept,) = ledger.superseded().values()
    finally:
        ledger.close()
    assert len(kept) == 1 and "interference" in kept[0]["flags"]
    assert kept[0]["tps"] > 0 and kept[0]["why"] == "interference"
    # Both measurements' raw files are there: the first under its own name.
    assert (results / kept[0]["artifact"]).is_file()
    assert (results / row["artifact"]).is_file() and row["artifact"] != kept[0]["artifact"]
    assert json.loads((results / "run.json").read_text())
