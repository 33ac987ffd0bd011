"""The toy order (tests/support/toys/toy_order.py), loaded as a plugin, is one a spec may
name, and the run measures its sessions in the toy's order: the last of each round first."""

from __future__ import annotations

import re
from pathlib import Path

from oltplab.store.scratch import SNAPSHOTS_ENV
from tests.support.cli import oltplab
from tests.support.engines import SAME_BINARY_TWICE, cells, spec_text
from tests.support.toys import with_plugin

ENGINE = "mariadb-10.11.5"


def test_a_plugin_s_order_measures_each_round_last_session_first(
    tmp_path: Path, shared_snapshots: Path
) -> None:
    text = spec_text([], threads=[1], measure=1, warmup=0, workloads=("oltp_read_only",))
    protocol = '[protocol]\norder = "last-first"\nrepetitions = 1\n'
    (tmp_path / "s.toml").write_text(text.replace("[protocol]\n", SAME_BINARY_TWICE + protocol))
    env = with_plugin("toy_order") | {SNAPSHOTS_ENV: str(shared_snapshots)}
    results = tmp_path / "out"
    run = oltplab("run", "s.toml", "-r", str(results), "--no-telemetry", cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = cells(results)
    assert {r["status"] for r in rows} == {"done"} and len(rows) == 2
    # The plan lists the first engine first; the toy measures the round the other way round.
    log = (results / "oltplab.log").read_text()
    started = re.findall(r"INFO (\S+) 128M oltp_read_only: session started", log)
    assert started == [f"{ENGINE}-b", ENGINE], started
    # Without the plugin the name is refused, in one line naming the key and the orders known.
    del env["OLTPLAB_PLUGINS"]
    refused = oltplab("plan", "s.toml", cwd=tmp_path, env=env)
    assert refused.returncode == 2
    assert "order" in refused.stderr and "Input should be 'as-listed'" in refused.stderr
