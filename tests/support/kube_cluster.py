"""The project's own one-node Kubernetes cluster for the tests (scripts/kube-up.sh's), with
its state in the test's folder, and what it must not leave or reach: the checks that it
stopped whole and that nothing it ran spoke to an address beyond this machine."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.phases import cluster_time

ROOT = Path(__file__).resolve().parents[2]
BRIDGE = "oltplab0"
# Where the cluster's sockets may point: loopback, its bridge's pods and its Services.
LOCAL = [
    ipaddress.ip_network(n) for n in ("127.0.0.0/8", "::1/128", "10.244.0.0/24", "10.96.0.0/24")
]
WILDCARDS = {"*", "0.0.0.0", "::", "[::]"}
# What `ss -p` names the cluster's own processes on this machine (its DNS server included).
CLUSTER_PROCESSES = ("etcd", "kube-", "kubelet", "containerd", "coredns", "runc", "oltplab")
# Whose running means a cluster is up here (as /proc/PID/comm names them, cut at 15 bytes).
CONTROL_PLANE = {"etcd", "kube-apiserver", "kubelet", "containerd"}


def why_not_here() -> str | None:
    """Why the cluster cannot start on this machine, or None."""
    if os.geteuid() != 0:
        return "the kubelet and containerd manage cgroups and namespaces: the tests need root"
    go = shutil.which("go") or "/usr/local/go/bin/go"
    if not Path(go).exists():
        return "go is missing, so the cluster cannot be built: scripts/setup.sh installs it"
    for tool in ("containerd", "runc", "umoci", "debootstrap", "iptables"):
        if shutil.which(tool) is None:
            return f"{tool} is missing: scripts/setup.sh installs it"
    if Path(f"/sys/class/net/{BRIDGE}").exists():
        return f"a cluster already runs here (bridge {BRIDGE}): scripts/kube-down.sh stops it"
    return None


def cluster_processes() -> list[str]:
    """The programs of a cluster's control plane running on this machine, whoever started
    them."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            name = (entry / "comm").read_text().strip() if entry.name.isdigit() else ""
        except OSError:
            continue  # it ended meanwhile
        if name in CONTROL_PLANE:
            found.append(f"{name} (pid {entry.name})")
    return found


def clear_a_killed_cluster(state: Path) -> None:
    """A test cluster killed before its own `down` (a session stopped with SIGKILL) leaves
    its bridge, which would make every later session skip these tests: with no control
    plane running anywhere here, the bridge is that debris, and `down` of the test's state
    removes it (and whatever else that cluster recorded)."""
    if Path(f"/sys/class/net/{BRIDGE}").exists() and state.exists() and not cluster_processes():
        print(cluster_command("down", state))


def cluster_command(action: str, state: Path, timeout: float = 1800) -> str:
    env = {**os.environ, "OLTPLAB_KUBE_STATE": str(state)}
    env["PATH"] = f"{env['PATH']}:/usr/local/go/bin"
    done = subprocess.run(
        ["python3", "-m", "deploy.kube.cluster", action], env=env, capture_output=True,
        text=True, timeout=timeout, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, f"kube {action}: {done.stdout}\n{done.stderr}"
    return done.stdout


@contextmanager
def kube_cluster(state: Path) -> Iterator[dict[str, str]]:
    """The cluster's KUBECONFIG while it runs; stopped afterwards, and (when what ran in it
    ended well) checked to have left nothing behind."""
    clear_a_killed_cluster(state)
    reason = why_not_here()
    if reason is not None:
        pytest.skip(reason)
    before = pod_networks()
    with cluster_time("kubernetes up"):
        said = cluster_command("up", state)
    try:
        yield {"KUBECONFIG": str(state / "admin.kubeconfig"), "said": said}
    finally:
        with cluster_time("kubernetes down"):
            cluster_command("down", state)
    assert leftovers(state, before) == []


def pod_networks() -> set[str]:
    """The pods' network namespaces (/run/netns/cni-*) and host-side veths (the bridge
    plugin's veth<hex>) on this machine: the ones there before the cluster are not its."""
    netns = Path("/run/netns")
    found = {f"netns {p.name}" for p in netns.glob("cni-*")} if netns.exists() else set()
    links = json.loads(
        subprocess.run(["ip", "-j", "-d", "link"], capture_output=True, text=True).stdout
    )
    return found | {
        f"link {link['ifname']}"
        for link in links
        if link.get("linkinfo", {}).get("info_kind") == "veth" and link["ifname"].startswith("veth")
    }


def leftovers(state: Path, before: Collection[str]) -> list[str]:
    """What a stopped cluster left on this machine; nothing, when it stopped whole: its
    processes, mounts, cgroups and bridge, and pods' namespaces and veths not there before
    (a namespace that something still holds lives on with its veth, named or not)."""
    found = sorted(pod_networks() - set(before))
    marker = str(state).encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                argv = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if marker in argv:
                command = argv.replace(b"\0", b" ")[:120].decode(errors="replace")
                found.append(f"process {entry.name}: {command}")
    found += [
        f"mount {line.split()[4]}"
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if line.split()[4].startswith(str(state))
    ]
    found += [f"cgroup {p}" for p in Path("/sys/fs/cgroup").glob("*/oltplab")]
    links = json.loads(subprocess.run(["ip", "-j", "link"], capture_output=True, text=True).stdout)
    found += [
        f"link {link['ifname']}"
        for link in links
        if link["ifname"] == BRIDGE or link.get("master") == BRIDGE
    ]
    return found


def _host(address: str) -> str:
    return address.rsplit(":", 1)[0].strip("[]").split("%")[0]


def _outside(address: str) -> bool:
    host = _host(address)
    if host in WILDCARDS:
        return False
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return True  # a name, never what ss -n prints: count it as outside
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not any(ip in network for network in LOCAL if network.version == ip.version)


def sockets_beyond_this_machine() -> list[str]:
    """Every TCP or UDP socket, in this machine's namespace and in each pod's, whose peer
    or bound address lies beyond loopback and the cluster's own networks."""
    namespaces: list[list[str]] = [[]]
    netns = Path("/run/netns")
    if netns.exists():
        namespaces += [["ip", "netns", "exec", entry.name] for entry in netns.glob("cni-*")]
    found = []
    for prefix in namespaces:
        listed = subprocess.run(
            [*prefix, "ss", "-tunaHp"], capture_output=True, text=True
        ).stdout.splitlines()
        for line in listed:
            words = line.split()
            if len(words) < 6:
                continue
            local, peer = words[4], words[5]
            # Only the cluster's processes and pods count; the machine's own sshd does not.
            ours = prefix or any(name in line for name in CLUSTER_PROCESSES)
            # A pod's wildcard covers the pod's own interface only; the machine's, every
            # interface it has, the one to the outside included.
            listens_everywhere = not prefix and _host(local) in WILDCARDS
            if ours and (_outside(peer) or _outside(local) or listens_everywhere):
                found.append(f"{' '.join(prefix[3:]) or 'host'}: {line}")
    return found
