"""Shards as one Slurm job array, through Slurm's own commands (sbatch, squeue, scontrol).

Each array task takes a whole node (`--exclusive`) and runs `oltplab run --shard K/N` on
the spec, the snapshots and the results in the distributed run's directory, which must be
on a filesystem every node sees. Slurm says which node ran a task (SLURMD_NODENAME), and
that is the machine the shard's cells are credited to.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import ClassVar

from oltplab.base.errors import EnvironmentProblem, OltplabError
from oltplab.distribute.layout import SNAPSHOTS, SPEC_FILE, Distributed
from oltplab.distribute.schedulers import TaskState, submit_option
from oltplab.store.files import write_atomic
from oltplab.store.scratch import WORK_DIR_ENV

# Options oltplab sets itself; a --sbatch-arg may not set them again.
_OWN_OPTIONS = ("--array", "-a", "--exclusive", "--output", "-o", "--parsable")


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise EnvironmentProblem(
            f"{name} not found on PATH: run this where Slurm's client commands are (a login "
            "node), or install them (Debian: apt-get install slurm-client)"
        )
    return path


def job_script(distributed: Distributed, oltplab: list[str]) -> str:
    """The batch script every array task runs; its shard is the task's index."""
    root = distributed.root
    shards = distributed.shards
    width = len(str(shards))
    command = " ".join(shlex.quote(part) for part in oltplab)
    return f"""#!/bin/sh
# oltplab shard runner: array task K runs shard K of {shards} (written by oltplab submit slurm)
set -eu
K="$SLURM_ARRAY_TASK_ID"
# Datadirs and snapshots on the node's own disk, never on the shared results volume.
export {WORK_DIR_ENV}="${{{WORK_DIR_ENV}:-${{SLURM_TMPDIR:-${{TMPDIR:-/tmp}}}}}}"
exec {command} run {shlex.quote(str(root / SPEC_FILE))} --shard "$K/{shards}" \\
  --results "{root}/shard-$(printf '%0{width}d' "$K")" \\
  --snapshots {shlex.quote(str(root / SNAPSHOTS))}
"""


def check_sbatch_args(args: list[str]) -> None:
    for arg in args:
        name = arg.split("=", 1)[0]
        if name in _OWN_OPTIONS:
            raise OltplabError(
                f"--sbatch-arg {arg}: oltplab sets {name} itself (one task per shard, a whole "
                "node each, logs under the results directory)"
            )


# Slurm's states in which a task has not ended: its shard's cells may all be done while its
# oltplab still writes, so the shard is not complete until Slurm says it ended.
UNFINISHED = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED"}


@dataclass(frozen=True)
class Slurm:
    """Submit the shards as one Slurm job array (a whole node each).

    Each field made with `submit_option` is an option of `oltplab submit slurm`."""

    partition: str | None = submit_option("Slurm partition.")
    time: str | None = submit_option("Time limit per shard (Slurm's form).")
    extra: tuple[str, ...] = submit_option(
        "One more sbatch option, as sbatch takes it (repeat).", default=(), flag="--sbatch-arg"
    )
    # What each task runs; this Python's oltplab unless a test says otherwise.
    oltplab: tuple[str, ...] = (sys.executable, "-m", "oltplab")
    name: ClassVar[str] = "slurm"

    def __post_init__(self) -> None:
        check_sbatch_args(list(self.extra))  # before `submit` writes anything

    def submit(self, distributed: Distributed, shards: list[int]) -> str:
        """One job array for these shards; Slurm's job id."""
        folder = distributed.root / "slurm"
        folder.mkdir(exist_ok=True)
        script = folder / "job.sh"
        write_atomic(script, job_script(distributed, list(self.oltplab)))
        script.chmod(0o755)
        args = [
            _tool("sbatch"),
            "--parsable",
            f"--array={','.join(map(str, shards))}",
            "--exclusive",
            f"--job-name=oltplab-{distributed.root.name}",
            f"--output={folder}/%A_%a.out",
            *([f"--partition={self.partition}"] if self.partition else []),
            *([f"--time={self.time}"] if self.time else []),
            *self.extra,
            str(script),
        ]
        done = subprocess.run(args, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()
            raise EnvironmentProblem(
                f"sbatch refused the job array: {said[-1] if said else done.returncode} (the "
                "cluster's configuration: see `sinfo` for its partitions and limits)"
            )
        job = done.stdout.strip().split(";")[0]
        distributed.jobs.append({"job": job, "shards": shards})
        distributed.save()
        return job

    def states(self, distributed: Distributed) -> dict[int, TaskState]:
        """Slurm's word on each shard's latest task: squeue while it waits or runs,
        scontrol after (as long as Slurm remembers it)."""
        if not distributed.jobs or shutil.which("squeue") is None:
            return {}
        found: dict[int, TaskState] = {}
        for job in distributed.jobs:
            for shard in job["shards"]:
                state = _scontrol(f"{job['job']}_{shard}")
                if state is not None:
                    found[int(shard)] = state
        done = subprocess.run(
            [_tool("squeue"), "-h", "-r", "-j", ",".join(str(j["job"]) for j in distributed.jobs),
             "-o", "%F|%K|%T|%N"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        latest = {int(j["job"]): j["shards"] for j in distributed.jobs}
        for line in done.stdout.splitlines():
            job_id, task, said, node = [*line.split("|"), "", "", "", ""][:4]
            if job_id.isdigit() and task.isdigit() and int(task) in latest.get(int(job_id), []):
                found[int(task)] = _task(said, node)
        return found

    def cancel(self, distributed: Distributed) -> list[int]:
        """scancel for each shard whose latest task is queued or running."""
        active = {k: s for k, s in self.states(distributed).items() if s.active}
        tasks = [
            f"{job['job']}_{shard}"
            for job in distributed.jobs
            for shard in job["shards"]
            if shard in active
        ]
        if tasks:
            done = subprocess.run([_tool("scancel"), *tasks], capture_output=True, text=True)
            if done.returncode != 0:
                raise EnvironmentProblem(f"scancel refused: {done.stderr.strip()[-300:]}")
        return sorted(active)


def _task(said: str, node: str) -> TaskState:
    return TaskState(said, "-" if node in ("(null)", "") else node, said in UNFINISHED)


def _scontrol(task: str) -> TaskState | None:
    done = subprocess.run(
        [_tool("scontrol"), "show", "job", "-o", task], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return None
    fields = dict(part.split("=", 1) for part in done.stdout.split() if "=" in part)
    if "JobState" not in fields:
        return None
    return _task(fields["JobState"], fields.get("NodeList", "-"))
