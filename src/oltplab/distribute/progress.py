"""Where each shard of a distributed run stands: the scheduler's word and its ledger's."""

from __future__ import annotations

from pathlib import Path

from oltplab.distribute.layout import SPEC_FILE, read_distributed, shard_state
from oltplab.distribute.schedulers import scheduler_named
from oltplab.spec import load_spec
from oltplab.store.lock import run_state
from oltplab.store.status import Status


def shard_rows(root: Path) -> list[dict[str, str]]:
    """One row per shard: its scheduler state and node, its cells, and where it stands,
    the scheduler's word first (a shard whose job still runs is not complete)."""
    distributed = read_distributed(root)
    spec = load_spec(root / SPEC_FILE)
    tasks = scheduler_named(distributed.scheduler).states(distributed)
    rows = []
    for index in range(1, distributed.shards + 1):
        state = shard_state(spec, distributed, index)
        task = tasks.get(index)
        job = task.said.lower() if task is not None and task.active else ""
        if state.complete and job:
            said = f"cells done; job {job}"
        elif state.complete:
            said = "complete"
        elif state.last_run is None:
            said = f"job {job}" if job else "not started"
        else:
            said = run_state(state.last_run, state.path)
        rows.append(
            {
                "results": str(state.path),
                "shard": f"{state.shard}",
                "scheduler": task.said if task else "-",
                "node": task.node if task else "-",
                "state": f"{said} ({state.planned} planned)",
                # A shard not started yet has all its cells still to run.
                **{k: str(v) for k, v in (state.counts or {Status.PENDING: state.planned}).items()},
            }
        )
    return rows
