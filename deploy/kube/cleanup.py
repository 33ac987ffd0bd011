"""Leaving nothing behind: pods, containers, mounts, network namespaces, cgroups, chains."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

from api import api_get, api_request
from layout import CGROUP_ROOT, run
from processes import alive, stop
from runtime import ctr


def remove_pods(state: Path) -> None:
    """Every pod gone through the kubelet, so that each sandbox's network is torn down."""
    if not all(alive(state, name) for name in ("kube-apiserver", "kubelet", "containerd")):
        return
    for name in ("kube-controller-manager", "kube-scheduler"):
        stop(state, name)  # nothing may make new pods while the old ones go
    namespaces = api_get(state, "/api/v1/namespaces")["items"]
    for namespace in namespaces:
        name = namespace["metadata"]["name"]
        api_request(state, "DELETE", f"/api/v1/namespaces/{name}/pods?gracePeriodSeconds=0")
    deadline = time.monotonic() + 60
    while ctr(state, "tasks", "ls", "--quiet").split() and time.monotonic() < deadline:
        time.sleep(0.5)


def leftover_tasks(state: Path) -> None:
    """Containers the kubelet did not stop in time: killed through containerd itself."""
    if not alive(state, "containerd"):
        return
    for task in ctr(state, "tasks", "ls", "--quiet").split():
        subprocess.run(["ctr", "--address", str(state / "containerd" / "containerd.sock"),
                        "--namespace", "k8s.io", "tasks", "kill", "--signal", "SIGKILL", task],
                       capture_output=True)  # fmt: skip


def unmount_under(*roots: Path) -> None:
    prefixes = tuple(str(root) for root in roots)
    mounts = [
        line.split()[4]
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if line.split()[4].startswith(prefixes)
    ]
    for target in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "--lazy", target], capture_output=True)


def make_cgroups() -> None:
    """The kubelet's cgroup root in every hierarchy, a cpuset's CPUs and memory nodes
    inherited (cgroup v1 leaves a new cpuset empty)."""
    for hierarchy in Path("/sys/fs/cgroup").iterdir():
        if hierarchy.name == "unified" or not hierarchy.is_dir():
            continue
        ours = hierarchy / CGROUP_ROOT
        ours.mkdir(exist_ok=True)
        for name in ("cpuset.cpus", "cpuset.mems"):
            if (ours / name).exists():
                (ours / name).write_text((hierarchy / name).read_text())


def remove_cgroups() -> None:
    for hierarchy in Path("/sys/fs/cgroup").iterdir():
        ours = hierarchy / CGROUP_ROOT
        if not ours.is_dir():
            continue
        for folder, _, _ in sorted(os.walk(ours), key=lambda w: len(w[0]), reverse=True):
            # A cgroup that still holds a process stays; down reports what runs.
            with contextlib.suppress(OSError):
                os.rmdir(folder)


def remove_chains(state: Path) -> None:
    """Firewall chains the kubelet added, with the rules that jump to them."""
    before_path = state / "iptables-before.txt"
    if not before_path.exists():
        return
    before = {
        line.split()[0] for line in before_path.read_text().splitlines() if line.startswith(":")
    }
    table = ""
    new_chains: dict[str, list[str]] = {}
    rules: list[tuple[str, str]] = []
    for line in run("iptables-save").stdout.splitlines():
        if line.startswith("*"):
            table = line[1:]
        elif line.startswith(":") and line.split()[0] not in before:
            new_chains.setdefault(table, []).append(line.split()[0][1:])
        elif line.startswith("-A "):
            rules.append((table, line))
    for table, line in rules:
        chain_names = new_chains.get(table, [])
        words = line.split()
        if words[1] in chain_names or any(word in chain_names for word in words[2:]):
            subprocess.run(["iptables", "-t", table, "-D", *words[1:]], capture_output=True)
    for table, chain_names in new_chains.items():
        for chain in chain_names:
            subprocess.run(["iptables", "-t", table, "-X", chain], capture_output=True)
