"""Where the cluster lives and what it is made of: its release, names, addresses and folders."""

from __future__ import annotations

import hashlib
import ipaddress
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

HERE = Path(__file__).resolve().parent
RELEASE = "v1.31.4"
NODE = "oltplab-node"
BRIDGE = "oltplab0"
POD_CIDR = ipaddress.ip_network("10.244.0.0/24")
GATEWAY = str(next(POD_CIDR.hosts()))  # the bridge's own address: the node's address
SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/24")
PAUSE_IMAGE = "oltplab.local/pause:3.10"
DOMAIN = "cluster.local"
CGROUP_ROOT = "oltplab"  # the kubelet's, in each cgroup hierarchy
DNS_USER = "oltplab:coredns"  # what the cluster's DNS server reads the API as
PROXY_USER = "system:kube-proxy"  # bound to system:node-proxier by the API server itself
# Each binary: the Go module folder it is built in, and its command's package. etcd's
# server module is itself a command; CoreDNS has a module of its own.
COMMANDS = {
    "etcd": (HERE, "go.etcd.io/etcd/server/v3"),
    "kube-apiserver": (HERE, "k8s.io/kubernetes/cmd/kube-apiserver"),
    "kube-controller-manager": (HERE, "k8s.io/kubernetes/cmd/kube-controller-manager"),
    "kube-scheduler": (HERE, "k8s.io/kubernetes/cmd/kube-scheduler"),
    "kubelet": (HERE, "k8s.io/kubernetes/cmd/kubelet"),
    "kube-proxy": (HERE, "k8s.io/kubernetes/cmd/kube-proxy"),
    "coredns": (HERE / "dns", "github.com/coredns/coredns"),
    "pause": (HERE, "./pause"),
}
# What the release's own build stamps in, so that its components report their version.
VERSION_FLAGS = tuple(
    f"-X k8s.io/{package}.{name}={value}"
    for package in ("component-base/version", "client-go/pkg/version")
    for name, value in (("gitVersion", RELEASE), ("gitMajor", "1"), ("gitMinor", "31"),
                        ("gitTreeState", "clean"))
)  # fmt: skip
DEBIAN_TOOLS = {
    "containerd": "containerd",
    "runc": "runc",
    "ctr": "containerd",
    "umoci": "umoci",
    "iptables": "iptables",
    "openssl": "openssl",
    "/usr/lib/cni/bridge": "containernetworking-plugins",
}
# Started in this order, stopped in the reverse one.
COMPONENTS = (
    "containerd",
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "coredns",
    "kubelet",
    "kube-proxy",
)


class ClusterError(Exception):
    """One line saying what is wrong and how to put it right."""


def go_command() -> str:
    found = shutil.which("go") or "/usr/local/go/bin/go"
    if not Path(found).exists():
        raise ClusterError("go is missing: scripts/setup.sh installs it (golang-go)")
    return found


def cache_root() -> Path:
    return Path(os.environ.get("OLTPLAB_CACHE", Path.home() / ".cache" / "oltplab"))


def bin_dir() -> Path:
    """Keyed by the release and every pin of the Go modules: a changed pin builds anew."""
    pins = hashlib.sha256(" ".join(VERSION_FLAGS).encode())
    for module in sorted({folder for folder, _ in COMMANDS.values()}):
        pins.update((module / "go.sum").read_bytes())
    return cache_root() / "kube" / f"{RELEASE}-{pins.hexdigest()[:8]}" / "bin"


def state_dir() -> Path:
    return Path(os.environ.get("OLTPLAB_KUBE_STATE", cache_root() / "kube" / "cluster"))


def free_port() -> int:
    with closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    """A tool that must succeed; its error output travels with the failure."""
    return subprocess.run(argv, check=True, capture_output=True, text=True)


def exit_status(what: str, work: Callable[[], object]) -> int:
    """Runs the work; a problem ends it with one line naming what failed: 2 for what the
    user can put right, 3 for a tool that failed."""
    try:
        work()
    except ClusterError as problem:
        print(f"{what}: {problem}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as failed:
        command = " ".join(map(str, failed.cmd))
        print(f"{what}: {command} failed: {failed.stderr or ''}".strip(), file=sys.stderr)
        return 3
    return 0
