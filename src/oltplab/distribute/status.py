"""Where each shard of a distributed run stands: the scheduler's word and its ledger's."""

from __future__ import annotations

from pathlib import Path

from oltplab.display import run_state
from oltplab.distribute import slurm
from oltplab.distribute.layout import SPEC_FILE, read_distributed, shard_state
from oltplab.spec import load_spec
from oltplab.store.lock import holder


def shard_rows(root: Path) -> list[dict[str, str]]:
    """One row per shard: its scheduler state and node, its cells, and whether it is done."""
    distributed = read_distributed(root)
    spec = load_spec(root / SPEC_FILE)
    tasks = slurm.task_states(distributed) if distributed.scheduler == "slurm" else {}
    rows = []
    for index in range(1, distributed.shards + 1):
        state = shard_state(spec, distributed, index)
        task = tasks.get(index)
        if state.complete:
            said = "complete"
        elif state.last_run is None:
            said = "not started"
        else:
            said = run_state(state.last_run, holder(state.path))
        rows.append(
            {
                "results": str(state.path),
                "shard": str(state.shard),
                "scheduler": task.state if task else "-",
                "node": task.node if task else "-",
                "state": f"{said}, {state.planned} cell(s) planned",
                **{k: str(v) for k, v in state.counts.items()},
            }
        )
    return rows
