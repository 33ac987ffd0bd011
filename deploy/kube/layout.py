"""Where the cluster lives and what it is made of: its release, names, addresses and folders."""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
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
# Built from the release's commands; etcd's server module is itself a command.
COMMANDS = {
    "etcd": "go.etcd.io/etcd/server/v3",
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
    "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
    "kubelet": "k8s.io/kubernetes/cmd/kubelet",
    "pause": "./pause",
}
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
    "kubelet",
)


class ClusterError(Exception):
    """One line saying what is wrong and how to put it right."""


def cache_root() -> Path:
    return Path(os.environ.get("OLTPLAB_CACHE", Path.home() / ".cache" / "oltplab"))


def bin_dir() -> Path:
    return cache_root() / "kube" / RELEASE / "bin"


def state_dir() -> Path:
    return Path(os.environ.get("OLTPLAB_KUBE_STATE", cache_root() / "kube" / "cluster"))


def free_port() -> int:
    with closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    """A tool that must succeed; its error output travels with the failure."""
    return subprocess.run(argv, check=True, capture_output=True, text=True)
