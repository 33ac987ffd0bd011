"""What every scheduler does, checked the same way for each: the test scheduler here (unit
tests) and Slurm with real daemons (integration tests)."""

from __future__ import annotations

import time
from pathlib import Path

from oltplab.distribute.layout import Distributed, prepare, read_distributed
from oltplab.distribute.progress import shard_rows
from oltplab.distribute.schedulers import Scheduler, registered, scheduler_named
from oltplab.spec import parse_spec

SPEC = """
name = "contract"
[[engines]]
name = "mariadb-10.11.5"
[[workloads]]
name = "oltp_read_only"
[protocol]
threads = [1, 2]
[distribute]
block = ["threads"]
"""


def distributed_run(root: Path, scheduler: str) -> Distributed:
    return prepare(root, parse_spec(SPEC, "contract"), 2, scheduler)


def _until(condition, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def check_scheduler(scheduler: Scheduler, distributed: Distributed, timeout: float = 60) -> None:
    """Submit two shards, see them active where `status` shows them, cancel them, and see
    them end; a second cancel finds nothing to stop."""
    assert scheduler.name in registered()
    assert scheduler_named(scheduler.name).name == scheduler.name
    job = scheduler.submit(distributed, [1, 2])
    # A scheduler may record more of a job (Kubernetes: its namespace).
    assert {k: distributed.jobs[-1][k] for k in ("job", "shards")} == {"job": job, "shards": [1, 2]}
    assert read_distributed(distributed.root).jobs == distributed.jobs  # saved for later

    def active() -> set[int]:
        return {k for k, s in scheduler.states(distributed).items() if s.active}

    _until(lambda: active() == {1, 2}, "both shards queued or running", timeout)
    rows = shard_rows(distributed.root)
    assert [r["shard"] for r in rows] == ["1/2", "2/2"]
    assert all(r["scheduler"] != "-" and "job " in r["state"] for r in rows), rows

    assert sorted(scheduler.cancel(distributed)) == [1, 2]
    _until(lambda: not active(), "the cancelled shards to end", timeout)
    assert scheduler.cancel(distributed) == []
    assert all("job " not in r["state"] for r in shard_rows(distributed.root))
