"""Leaving nothing behind: pods, containers, mounts, network namespaces, cgroups, chains."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

from deploy.kube.api import delete_all_pods
from deploy.kube.layout import CGROUP_ROOT, run
from deploy.kube.processes import alive, stop
from deploy.kube.runtime import ctr


def remove_pods(state: Path) -> None:
    """Every pod gone through the kubelet, so that each sandbox's network is torn down."""
    if not all(alive(state, name) for name in ("kube-apiserver", "kubelet", "containerd")):
        return
    for name in ("kube-controller-manager", "kube-scheduler"):
        stop(state, name)  # nothing may make new pods while the old ones go
    delete_all_pods(state)
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


# Where containerd's CRI plugin pins a pod's network namespace (/var/run/netns/cni-<uuid>);
# other runtimes (Docker, Podman, another containerd) name theirs the same way there.
NETNS = Path("/run/netns")


def named_in(metadata: bytes, names: list[str]) -> list[str]:
    """The namespaces a containerd's metadata names as a sandbox's ("NetNSPath":
    ".../netns/cni-<uuid>", the sandbox's JSON in its bolt file): that containerd made
    them, and each name, a random uuid, was never another's."""
    return [name for name in names if b"/netns/" + name.encode() + b'"' in metadata]


def remove_network_namespaces(state: Path, folder: Path = NETNS) -> list[str]:
    """The pods' namespaces this cluster's containerd made and did not remove, unmounted
    and removed; the names of the cni-* ones left, which it cannot be shown to have made
    and so may be another runtime's."""
    names = sorted(entry.name for entry in folder.glob("cni-*")) if folder.exists() else []
    bolt = state / "containerd" / "root" / "io.containerd.metadata.v1.bolt" / "meta.db"
    ours = named_in(bolt.read_bytes() if bolt.exists() else b"", names)
    for name in ours:
        subprocess.run(["umount", "--lazy", str(folder / name)], capture_output=True)
        (folder / name).unlink(missing_ok=True)
    return [name for name in names if name not in ours]


CGROUPS = Path("/sys/fs/cgroup")


def kill_pod_processes(root: Path = CGROUPS, seconds: float = 10) -> list[int]:
    """The processes still in the kubelet's cgroups, killed: a pod's, left running when its
    shim or containerd died before it (killing a shim leaves its container's processes to
    init). While one runs, its pod's network namespace lives on, with its veth on this
    machine, though /run/netns no longer names it. The pids killed."""
    procs = [
        f for h in root.iterdir() if h.is_dir() for f in (h / CGROUP_ROOT).rglob("cgroup.procs")
    ]

    def running() -> set[int]:
        found: set[int] = set()
        for listed in procs:
            with contextlib.suppress(OSError):
                found.update(int(pid) for pid in listed.read_text().split())
        return found

    killed = sorted(running())
    for pid in killed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + seconds
    while running() and time.monotonic() < deadline:
        time.sleep(0.1)
    return killed


def make_cgroups() -> None:
    """The kubelet's cgroup root in every hierarchy, a cpuset's CPUs and memory nodes
    inherited (cgroup v1 leaves a new cpuset empty)."""
    for hierarchy in CGROUPS.iterdir():
        if hierarchy.name == "unified" or not hierarchy.is_dir():
            continue
        ours = hierarchy / CGROUP_ROOT
        ours.mkdir(exist_ok=True)
        for name in ("cpuset.cpus", "cpuset.mems"):
            if (ours / name).exists():
                (ours / name).write_text((hierarchy / name).read_text())


def remove_cgroups() -> None:
    for hierarchy in CGROUPS.iterdir():
        ours = hierarchy / CGROUP_ROOT
        if not ours.is_dir():
            continue
        for folder, _, _ in sorted(os.walk(ours), key=lambda w: len(w[0]), reverse=True):
            # A cgroup that still holds a process stays; down reports what runs.
            with contextlib.suppress(OSError):
                os.rmdir(folder)


FIREWALLS = ("iptables", "ip6tables")


def _chains(tool: str) -> tuple[set[tuple[str, str]], list[tuple[str, list[str]]]]:
    """The (table, chain) pairs of one firewall tool, and its rules as (table, words)."""
    chains, rules, table = set(), [], ""
    for line in run(f"{tool}-save").stdout.splitlines():
        if line.startswith("*"):
            table = line[1:]
        elif line.startswith(":"):
            chains.add((table, line.split()[0][1:]))
        elif line.startswith("-A "):
            rules.append((table, shlex.split(line)))
    return chains, rules


def remember_firewalls(state: Path) -> None:
    """The chains there before the cluster: down removes only the ones it added."""
    found = {tool: sorted(_chains(tool)[0]) for tool in FIREWALLS if shutil.which(tool)}
    (state / "firewall-before.json").write_text(json.dumps(found) + "\n")


def remove_chains(state: Path) -> None:
    """Firewall chains the kubelet added, IPv4 and IPv6, with the rules that jump to them."""
    path = state / "firewall-before.json"
    if not path.exists():
        return
    before = json.loads(path.read_text())
    for tool in before:
        chains, rules = _chains(tool)
        added = chains - {(table, chain) for table, chain in before[tool]}
        for table, words in rules:
            if {(table, word) for word in words[1:]} & added:
                subprocess.run([tool, "-t", table, "-D", *words[1:]], capture_output=True)
        for table, chain in sorted(added):
            subprocess.run([tool, "-t", table, "-F", chain], capture_output=True)
            subprocess.run([tool, "-t", table, "-X", chain], capture_output=True)
