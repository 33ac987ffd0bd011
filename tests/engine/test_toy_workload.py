"""The toy workload kind (tests/support/toys/toy_workload.py), loaded as a plugin by
OLTPLAB_PLUGINS, runs a real benchmark from the command line beside an sbtest workload:
each kind's dataset is loaded once into the engine's one snapshot, each session restores
it, both workloads are measured, and the results are reported without the plugin."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.support.cli import oltplab
from tests.support.engines import NO_ENGINE_SUMMARY, cells, spec_text
from tests.support.toys import with_plugin

# Its subject is a plugin kind's loading into the snapshot.
pytestmark = pytest.mark.fresh_engines


def test_the_toy_workload_runs_from_the_command_line_beside_sbtest(tmp_path: Path) -> None:
    text = spec_text(["mariadb-10.11.5"], threads=[1], measure=2, warmup=0).replace(
        'workloads = ["oltp_read_write"]', 'workloads = ["oltp_point_select", {kind = "toy"}]'
    )
    (tmp_path / "s.toml").write_text(text)
    env = with_plugin("toy_workload")
    result = oltplab("run", "s.toml", "--results", "out", *NO_ENGINE_SUMMARY, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = cells(tmp_path / "out")
    assert {r["workload"] for r in rows} == {"oltp_point_select", "toy"}
    assert all(r["status"] == "done" and r["tps"] > 0 for r in rows)
    # Each kind loaded once, both into the one snapshot, which says it holds both.
    work = tmp_path / "out" / ".work"
    assert len(list(work.rglob("prepare.sysbench.txt"))) == 1
    assert len(list(work.rglob("prepare-toy.sysbench.txt"))) == 1
    [marker] = work.rglob("snapshot.json")
    assert json.loads(marker.read_text())["dataset"].endswith(" + toy_rows=1000")
    facts = json.loads((tmp_path / "out" / "run.json").read_text())["workloads"]
    assert facts["toy"]["kind"] == "toy" and facts["toy"]["rows"] == 1000
    plain = {name: value for name, value in os.environ.items() if name != "OLTPLAB_PLUGINS"}
    report = oltplab("report", "out", cwd=tmp_path, env=plain)
    assert report.returncode == 0, report.stderr

    # (issue 60) What the finished run no longer needs is freed; what reports read stays.
    before = {p for p in (tmp_path / "out").rglob("*") if ".work" not in p.parts}
    cleaned = oltplab("clean", "out", cwd=tmp_path, env=plain)
    assert cleaned.returncode == 0, cleaned.stderr
    freed = re.search(r"^freed ([\d.]+) (KB|MB|GB): ", cleaned.stdout, flags=re.MULTILINE)
    assert freed is not None and float(freed[1]) > 0, cleaned.stdout
    assert not work.exists()
    assert set((tmp_path / "out").rglob("*")) >= before
    again = oltplab("report", "out", "-o", "again", cwd=tmp_path, env=plain)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "again" / "report.md").read_text().count("| toy |") == (
        (tmp_path / "out" / "report" / "report.md").read_text().count("| toy |")
    )
