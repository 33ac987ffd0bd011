"""A toy scheduler: the whole of what a new scheduler takes, one module and the one
registration line at its end. `OLTPLAB_PLUGINS=tests.support.toys.toy_scheduler oltplab submit toy
SPEC -n 2 -r RUN --seconds 60` submits to it; `oltplab status RUN` and `oltplab cancel RUN`
then work for it as for Slurm."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from oltplab.distribute.layout import Distributed
from oltplab.distribute.schedulers import TaskState, register, submit_option


@dataclass(frozen=True)
class Toy:
    """Run each shard as a background process of this machine, a sleep standing in for its
    oltplab run: no engine starts."""

    seconds: int = submit_option("How long each shard's stand-in process lasts.", default=120)
    name: ClassVar[str] = "toy"

    def _pids(self, distributed: Distributed) -> Path:
        return distributed.root / "toy.json"

    def submit(self, distributed: Distributed, shards: list[int]) -> str:
        # Started through a shell that exits at once, so init reaps it, not oltplab.
        pids = {
            str(shard): int(
                subprocess.run(
                    ["sh", "-c", f"sleep {self.seconds} >/dev/null 2>&1 & echo $!"],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
            for shard in shards
        }
        known = json.loads(p.read_text()) if (p := self._pids(distributed)).exists() else {}
        self._pids(distributed).write_text(json.dumps({**known, **pids}))
        job = f"toy-{len(distributed.jobs) + 1}"
        distributed.jobs.append({"job": job, "shards": shards})
        distributed.save()
        return job

    def states(self, distributed: Distributed) -> dict[int, TaskState]:
        if not self._pids(distributed).exists():
            return {}
        found = {}
        for shard, pid in json.loads(self._pids(distributed).read_text()).items():
            try:
                name, _, rest = Path(f"/proc/{pid}/stat").read_text().rpartition(") ")
            except FileNotFoundError:
                name, rest = "", ""
            # Its own sleep (not a later process given the pid), and no zombie: a zombie has
            # ended, and nothing may reap it where init does not.
            alive = name.endswith("(sleep") and rest.split()[0] != "Z"
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


register(Toy.name, Toy)
