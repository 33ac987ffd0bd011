"""A scheduler is one class and one registration: a test scheduler, registered here only,
runs each shard as a background process of this machine and passes the contract every
scheduler passes (Slurm's run in tests/integration/test_distribute.py), and `status`,
`cancel` and resubmission work for it through the registry alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from oltplab.base.errors import OltplabError
from oltplab.cli import app
from oltplab.distribute.layout import Distributed
from oltplab.distribute.schedulers import TaskState, register, scheduler_named
from tests.cli import oltplab
from tests.scheduler_contract import check_scheduler, distributed_run


@dataclass(frozen=True)
class Background:
    """Each shard's task is a background process (a sleep standing in for the shard's run),
    its pid kept under the run's directory."""

    name: ClassVar[str] = "background"

    def _pids(self, distributed: Distributed) -> Path:
        return distributed.root / "background.json"

    def submit(self, distributed: Distributed, shards: list[int]) -> str:
        # Started through a shell that exits at once, so init reaps it, not this test.
        pids = {
            str(shard): int(
                subprocess.run(
                    ["sh", "-c", "sleep 120 >/dev/null 2>&1 & echo $!"],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
            for shard in shards
        }
        known = json.loads(p.read_text()) if (p := self._pids(distributed)).exists() else {}
        self._pids(distributed).write_text(json.dumps({**known, **pids}))
        job = f"bg-{len(distributed.jobs) + 1}"
        distributed.jobs.append({"job": job, "shards": shards})
        distributed.save()
        return job

    def states(self, distributed: Distributed) -> dict[int, TaskState]:
        if not self._pids(distributed).exists():
            return {}
        found = {}
        for shard, pid in json.loads(self._pids(distributed).read_text()).items():
            stat = Path(f"/proc/{pid}/stat")
            # A zombie has ended: nothing may reap it where init does not.
            alive = stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
            found[int(shard)] = TaskState("RUNNING" if alive else "ENDED", "here", alive)
        return found

    def cancel(self, distributed: Distributed) -> list[int]:
        stopped = []
        for shard, state in self.states(distributed).items():
            if state.active:
                pid = json.loads(self._pids(distributed).read_text())[str(shard)]
                os.kill(pid, signal.SIGTERM)
                stopped.append(shard)
        return sorted(stopped)


register(Background.name, Background)


def test_a_scheduler_registered_in_one_line_passes_the_contract(tmp_path: Path) -> None:
    check_scheduler(Background(), distributed_run(tmp_path / "run", Background.name))


def test_cancel_goes_through_the_scheduler_the_run_records(tmp_path: Path) -> None:
    distributed = distributed_run(tmp_path / "run", Background.name)
    Background().submit(distributed, [2])
    done = CliRunner().invoke(app, ["cancel", str(tmp_path / "run")])
    assert done.exit_code == 0, done.output
    assert "cancelled shard(s): 2" in done.output and "Next: oltplab status" in done.output
    not_distributed = oltplab("cancel", ".", cwd=tmp_path)
    assert not_distributed.returncode == 2
    assert "not a distributed run" in not_distributed.stderr


def test_an_unknown_scheduler_is_named_with_the_known_ones() -> None:
    with pytest.raises(OltplabError, match=r"scheduler 'pbs'.*known: background, .*slurm"):
        scheduler_named("pbs")
