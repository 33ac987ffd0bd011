"""Where a run's scratch lives: its engines' datadirs, snapshots and prepare output, which
are never results (import, merge and reports leave them out)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from oltplab.store.directory import ResultsDir

# Names node-local storage for a run's scratch (a distributed shard's job sets it, and
# `oltplab run --work-dir`).
WORK_DIR_ENV = "OLTPLAB_WORK_DIR"


def scratch_root(results: Path) -> Path:
    """`<results>/.work`, or, when OLTPLAB_WORK_DIR names node-local storage, a folder
    there named for the results directory: a shard resumed on the same node finds its
    engines again, and its database files stay off the shared results volume (a network
    filesystem would be measured instead of the engine)."""
    local = os.environ.get(WORK_DIR_ENV)
    if not local:
        return ResultsDir(results).work
    digest = hashlib.sha256(str(results.resolve()).encode()).hexdigest()[:16]
    return Path(local) / f"oltplab-{digest}"
