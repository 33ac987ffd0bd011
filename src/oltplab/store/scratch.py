"""Where a run's scratch lives: its engines' datadirs, snapshots and prepare output, which
are never results (import, merge and reports leave them out)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from oltplab.base.errors import OltplabError
from oltplab.store.directory import ResultsDir

# Names node-local storage for a run's scratch (a distributed shard's job sets it, and
# `oltplab run --work-dir`).
WORK_DIR_ENV = "OLTPLAB_WORK_DIR"
# Names the prepared-dataset store every run on this machine shares, when a run is given
# none (`--snapshots`): a run then takes a dataset another run prepared from one binary.
SNAPSHOTS_ENV = "OLTPLAB_SNAPSHOTS"


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


def snapshot_store(given: Path | None) -> Path | None:
    """The prepared-dataset store a run uses: the one it is given, else OLTPLAB_SNAPSHOTS's."""
    if given is not None:
        return given
    shared = os.environ.get(SNAPSHOTS_ENV)
    if not shared:
        return None
    if Path(shared).exists() and not Path(shared).is_dir():
        raise OltplabError(f"{SNAPSHOTS_ENV}={shared}: not a folder; name a folder, or unset it")
    return Path(shared)
