"""The toy round policy (tests/support/toys/toy_policy.py), loaded as a plugin, adds two
batches of rounds to a sliced run of two engines: one run, whose engines start once for
all three batches (a precision search adds its batches the same way)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from oltplab.store.scratch import SNAPSHOTS_ENV
from tests.support.cli import oltplab
from tests.support.engines import SAME_BINARY_TWICE, cells, spec_text
from tests.support.toys import with_plugin

ENGINE = "mariadb-10.11.5"
PLANNED = 2  # rounds in the plan: a batch
# The toy's batches (its BATCHES). Not imported: imported, the toy would register itself for
# every run this test process makes.
BATCHES = 3


def test_a_policy_s_batches_run_on_the_engines_the_first_batch_started(
    tmp_path: Path, shared_snapshots: Path
) -> None:
    text = spec_text([], threads=[1], measure=1, warmup=0, workloads=("oltp_read_only",))
    protocol = f'[protocol]\norder = "sliced"\nrepetitions = {PLANNED}\nslice_seconds = 0.5\n'
    (tmp_path / "s.toml").write_text(text.replace("[protocol]\n", SAME_BINARY_TWICE + protocol))
    env = with_plugin("toy_policy") | {SNAPSHOTS_ENV: str(shared_snapshots)}
    results = tmp_path / "out"
    run = oltplab("run", "s.toml", "-r", str(results), "--no-telemetry", cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = cells(results)
    assert sorted({r["repetition"] for r in rows}) == list(range(1, BATCHES * PLANNED + 1))
    assert {r["status"] for r in rows} == {"done"} and len(rows) == 2 * BATCHES * PLANNED
    # Each round's two cells started together: sliced, on both engines running.
    for repetition in range(1, BATCHES * PLANNED + 1):
        a, b = (r for r in rows if r["repetition"] == repetition)
        assert a["started_at"] == b["started_at"], repetition
    log = (results / "oltplab.log").read_text()
    started = re.findall(r"INFO (\S+) 128M oltp_read_only: session started", log)
    assert sorted(started) == [ENGINE, f"{ENGINE}-b"], started
    db = sqlite3.connect(f"file:{results / 'ledger.sqlite'}?mode=ro", uri=True)
    try:
        (runs,) = db.execute("SELECT count(*) FROM runs").fetchone()
    finally:
        db.close()
    assert runs == 1
