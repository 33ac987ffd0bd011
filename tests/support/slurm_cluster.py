"""A real two-node Slurm cluster on this machine, for the tests: Debian's munged, slurmctld
and two slurmd (nodes n1 and n2), each started here with its own config, ports, socket and
state folder, and stopped by pid afterwards. Nothing is installed as a service."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from tests.support.phases import cluster_time

NODES = ("n1", "n2")


def _free_port() -> int:
    with closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _config(root: Path, ports: dict[str, int]) -> str:
    nodes = "\n".join(
        f"NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1 Port={ports[n]} CPUs=2 "
        "State=UNKNOWN"
        for n in NODES
    )
    return f"""ClusterName=oltplabtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ports["ctld"]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={root}/munge.socket
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd-%n.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/filetxt
JobCompLoc={root}/jobcomp.txt
MinJobAge=3600
SlurmctldTimeout=30
SlurmdTimeout=30
{nodes}
PartitionName=main Nodes={",".join(NODES)} Default=YES MaxTime=INFINITE State=UP
"""


@contextmanager
def slurm_cluster(root: Path) -> Iterator[dict[str, str]]:
    """The cluster's environment (SLURM_CONF) while it runs."""
    for tool in ("munged", "slurmctld", "slurmd", "sbatch"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed (scripts/setup.sh installs slurm-wlm and munge)")
    if os.geteuid() != 0:
        pytest.skip("the test cluster's slurmd runs jobs as their user; it needs root here")
    root.mkdir(parents=True, exist_ok=True)
    for folder in ("state", *(f"spool/{n}" for n in NODES)):
        (root / folder).mkdir(parents=True)
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    ports = {"ctld": _free_port(), **{n: _free_port() for n in NODES}}
    conf = root / "slurm.conf"
    conf.write_text(_config(root, ports))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    started: list[subprocess.Popen[bytes]] = []
    sinks = contextlib.ExitStack()

    def start(*args: str, log: str) -> None:
        sink = sinks.enter_context((root / log).open("wb"))
        started.append(subprocess.Popen(args, env=env, stdout=sink, stderr=subprocess.STDOUT))

    try:
        with cluster_time("slurm up"):
            start(
                "munged", "-F", "-f", f"--socket={root}/munge.socket", f"--key-file={key}",
                f"--log-file={root}/munged.log", f"--pid-file={root}/munged.pid",
                f"--seed-file={root}/munged.seed", log="munged.out",
            )  # fmt: skip
            _wait(lambda: (root / "munge.socket").exists(), "munged")
            start("slurmctld", "-D", "-f", str(conf), log="slurmctld.out")
            time.sleep(1)
            for node in NODES:
                start("slurmd", "-D", "-N", node, "-f", str(conf), log=f"slurmd-{node}.out")

            def idle() -> bool:
                said = subprocess.run(
                    ["sinfo", "-h", "-o", "%T %D"], env=env, capture_output=True, text=True
                ).stdout.split()
                return said[:2] == ["idle", "2"]

            _wait(idle, "two idle Slurm nodes")
        yield {"SLURM_CONF": str(conf)}
    finally:
        with cluster_time("slurm down"):
            for process in reversed(started):
                process.terminate()
            for process in reversed(started):
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            sinks.close()


def _wait(condition, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")
