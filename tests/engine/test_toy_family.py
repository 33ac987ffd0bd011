"""The toy family (tests/support/toys/toy_family.py), loaded as a plugin by OLTPLAB_PLUGINS, runs
a real benchmark from the command line: MariaDB's binaries under the toy's name, its
results filed and recorded as the toy's, and reported without the plugin."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from tests.support.cli import oltplab
from tests.support.engines import NO_ENGINE_SUMMARY, cells, spec_text
from tests.support.toys import with_plugin

TOY_ENGINE = """[[engines]]
name = "toy"
family = "toy"
source = {debian = "mariadb-server-core"}
"""


def test_the_toy_family_runs_from_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(
        spec_text([], threads=[1], measure=2, warmup=0, extra=TOY_ENGINE)
    )
    env = with_plugin("toy_family")
    result = oltplab("run", "s.toml", "--results", "out", *NO_ENGINE_SUMMARY, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = cells(tmp_path / "out")
    assert rows and all(r["status"] == "done" and r["tps"] > 0 for r in rows)
    db = sqlite3.connect(tmp_path / "out" / "ledger.sqlite")
    try:
        [(family, server_version)] = db.execute("SELECT family, server_version FROM engines")
    finally:
        db.close()
    assert family == "toy" and "MariaDB" in server_version
    assert list((tmp_path / "out" / "benchmark_logs" / "toy").glob("*/Tier*_RW_1th.sysbench.txt"))
    # Its results are read without the plugin: they hold no code of it.
    plain = {name: value for name, value in os.environ.items() if name != "OLTPLAB_PLUGINS"}
    report = oltplab("report", "out", cwd=tmp_path, env=plain)
    assert report.returncode == 0, report.stderr
