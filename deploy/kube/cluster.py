"""A one-node Kubernetes cluster on this machine, built and started by the project itself.

Its parts are the real ones: etcd, kube-apiserver, kube-controller-manager, kube-scheduler
and the kubelet built with Go from the pinned release (deploy/kube/go.mod), Debian's
containerd, runc and CNI plugins, and a sandbox image built here. Nothing comes from a
registry and nothing talks beyond this machine: the control plane listens on loopback and on
the cluster's own bridge, and pods get addresses on that bridge with no route out of it.

Everything the cluster writes lives in one state folder under oltplab's cache
(OLTPLAB_CACHE, or OLTPLAB_KUBE_STATE to move it), every process it starts is recorded by
pid, and `down` stops exactly those (and what its pods left running, should containerd have
died first), then removes the mounts, cgroups, network namespaces, bridge and firewall
chains the cluster made.

    python3 -m deploy.kube.cluster up      # build if needed, start, wait for a Ready node
    python3 -m deploy.kube.cluster down    # stop it and leave nothing behind
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from deploy.kube.api import allow_dns_reads, api_ready, node_ready, wait_for
from deploy.kube.cleanup import (
    NETNS,
    kill_pod_processes,
    leftover_tasks,
    make_cgroups,
    remember_firewalls,
    remove_cgroups,
    remove_chains,
    remove_network_namespaces,
    remove_pods,
    unmount_under,
)
from deploy.kube.components import commands
from deploy.kube.layout import (
    BRIDGE,
    COMMANDS,
    COMPONENTS,
    DEBIAN_TOOLS,
    NODE,
    PAUSE_IMAGE,
    VERSION_FLAGS,
    ClusterError,
    bin_dir,
    exit_status,
    free_port,
    go_command,
    state_dir,
)
from deploy.kube.operators import install_operators
from deploy.kube.pki import kubeconfig, make_pki
from deploy.kube.processes import alive, shims, start, stop
from deploy.kube.runtime import (
    REFUSE_PULLS,
    check_addresses,
    cni_config,
    import_image,
    make_bridge,
    pause_image,
)


def build() -> float:
    """The pinned binaries in the cache, built once; the seconds the build took."""
    missing = [name for name in COMMANDS if not (bin_dir() / name).exists()]
    if not missing:
        return 0.0
    bin_dir().mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly -buildvcs=false"}
    started = time.monotonic()
    for name in missing:
        module, package = COMMANDS[name]
        print(f"building {name} ({package}) ...", flush=True)
        output = bin_dir() / f".{name}.partial"
        subprocess.run(
            [
                go_command(),
                "build",
                "-trimpath",
                "-ldflags",
                " ".join(VERSION_FLAGS),
                "-o",
                str(output),
                package,
            ],
            cwd=module,
            env=env,
            check=True,
        )
        output.rename(bin_dir() / name)
    seconds = time.monotonic() - started
    print(f"built {', '.join(missing)} in {seconds:.0f} s into {bin_dir()}", flush=True)
    return seconds


def check_tools() -> None:
    absent = sorted(
        {package for tool, package in DEBIAN_TOOLS.items() if not shutil.which(tool)}
        | {
            package
            for tool, package in DEBIAN_TOOLS.items()
            if "/" in tool and not Path(tool).exists()
        }
    )
    if absent:
        raise ClusterError(
            f"missing Debian packages: {' '.join(absent)}; scripts/kube-up.sh installs them"
        )
    if os.geteuid() != 0:
        raise ClusterError("the kubelet and containerd manage cgroups and namespaces: run as root")


def up(with_operators: bool = False) -> None:
    check_tools()
    state = state_dir()
    if any(alive(state, component) for component in COMPONENTS):
        raise ClusterError(f"a cluster already runs from {state}: scripts/kube-down.sh stops it")
    if Path(f"/sys/class/net/{BRIDGE}").exists():
        raise ClusterError(
            f"bridge {BRIDGE} exists: another cluster runs here, or one was not stopped; "
            "scripts/kube-down.sh (with its OLTPLAB_KUBE_STATE) stops it"
        )
    check_addresses()
    build_seconds = build()
    try:
        start_cluster(state, build_seconds)
        if with_operators:
            install_operators(state)
    except BaseException:
        print("kube up failed: stopping what it started", file=sys.stderr)
        down()
        raise


def start_cluster(state: Path, build_seconds: float) -> None:
    started = time.monotonic()
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(parents=True)
    remember_firewalls(state)
    make_pki(state / "pki")
    cni_config(state)
    make_bridge()
    ports = {
        name: free_port()
        for name in (
            "etcd", "etcd-peer", "apiserver", "kubelet", "kube-proxy-health", "kube-proxy-metrics"
        )
    }  # fmt: skip
    (state / "ports.json").write_text(json.dumps(ports) + "\n")
    argv = commands(state, ports)
    admin = kubeconfig(state, "admin", ports["apiserver"])
    start(state, "containerd", argv["containerd"], env=REFUSE_PULLS)
    sock = state / "containerd" / "containerd.sock"
    wait_for("containerd", sock.exists, state, "containerd", 30)
    import_image(state, pause_image(), PAUSE_IMAGE)
    start(state, "etcd", argv["etcd"])
    start(state, "kube-apiserver", argv["kube-apiserver"])
    wait_for(
        "the API server",
        lambda: api_ready(state),
        state,
        "kube-apiserver",
        120,
    )
    allow_dns_reads(state)
    make_cgroups()
    for component in COMPONENTS[COMPONENTS.index("kube-controller-manager") :]:
        start(state, component, argv[component])
    wait_for(f"node {NODE}", lambda: node_ready(state), state, "kubelet", 180)
    ready = time.monotonic() - started
    built = f"built in {build_seconds:.0f} s, " if build_seconds else ""
    print(f"node {NODE} Ready: {built}{ready:.0f} s from start to a Ready node")
    print(f"state, logs and pids: {state}")
    print(f"next: export KUBECONFIG={admin}; kubectl get nodes; scripts/kube-down.sh to stop")


def down() -> None:
    state = state_dir()
    if not state.exists():
        print(f"no cluster state in {state}: nothing to stop")
        return
    try:
        remove_pods(state)
    except Exception as problem:  # the API server gone, refusing, or the client's own error
        print(f"the API server did not remove the pods ({problem}); stopping them directly")
    leftover_tasks(state)
    for component in reversed(COMPONENTS):
        stop(state, component)
    for pid in shims(state):
        os.kill(pid, signal.SIGKILL)
    if orphans := kill_pod_processes():
        print(f"killed {len(orphans)} process(es) of pods whose shim was gone")
    unmount_under(state)
    # Only the namespaces its containerd's metadata names: what else is in /run/netns
    # looks the same and may be another runtime's, with or without a record of before.
    if others := remove_network_namespaces(state):
        left = ", ".join(others)
        print(f"left in {NETNS}, as this cluster's containerd did not make them: {left}")
    remove_cgroups()
    subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True)
    remove_chains(state)
    print(f"cluster stopped; its state and logs stay in {state} until the next up")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("build", "up", "down"))
    parser.add_argument(
        "--with-operators",
        action="store_true",
        help="up: also install CloudNativePG and mariadb-operator (deploy.kube.operators)",
    )
    given = parser.parse_args()
    actions: dict[str, Callable[[], object]] = {
        "build": build,
        "up": lambda: up(given.with_operators),
        "down": down,
    }
    return exit_status(f"kube {given.action}", actions[given.action])


if __name__ == "__main__":
    sys.exit(main())
