"""`deploy.kube.cluster down` removes the pods' network namespaces its own containerd made
and no other: /run/netns holds other runtimes' cni-* namespaces too, named alike; and it kills
the processes its pods left in the kubelet's cgroups, which would keep a namespace alive. No
cluster is started: a folder stands for /run/netns, and one for /sys/fs/cgroup, a file for
containerd's metadata."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The cluster tooling runs as root on the real /run/netns: imported in a process of its own,
# its modules stay out of the test session's.
REMOVE = (
    "import json, sys\nfrom pathlib import Path\n"
    "from deploy.kube.cleanup import remove_network_namespaces\n"
    "print(json.dumps(remove_network_namespaces(Path(sys.argv[1]), Path(sys.argv[2]))))"
)
OURS = "cni-0b8e6a8e-3f7e-4c6c-9a57-2b1f1f7c1d2a"
THEIRS = "cni-7d1c5e7a-1f7b-8a3e-2b6d-c0ffee000001"  # Docker's, another containerd's
PREFIX_OF_OURS = OURS[:20]  # a name that is only a prefix of one containerd named


def down_in(state: Path, netns: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", REMOVE, str(state), str(netns)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def namespaces(tmp_path: Path) -> Path:
    netns = tmp_path / "netns"
    netns.mkdir()
    for name in (OURS, THEIRS, PREFIX_OF_OURS, "not-cni"):
        (netns / name).write_bytes(b"")
    return netns


def test_without_any_record_down_removes_no_namespace_and_names_them(tmp_path: Path) -> None:
    """The state of a cluster that left no record (no netns-before.json, no metadata):
    nothing in /run/netns can be shown to be its own, so nothing there is removed."""
    netns = namespaces(tmp_path)
    (tmp_path / "state").mkdir()
    left = down_in(tmp_path / "state", netns)
    assert left == sorted([OURS, THEIRS, PREFIX_OF_OURS])
    assert sorted(p.name for p in netns.iterdir()) == sorted(
        [OURS, THEIRS, PREFIX_OF_OURS, "not-cni"]
    )


def test_down_removes_only_the_namespaces_its_containerd_names(tmp_path: Path) -> None:
    netns = namespaces(tmp_path)
    bolt = tmp_path / "state" / "containerd" / "root" / "io.containerd.metadata.v1.bolt"
    bolt.mkdir(parents=True)
    # A sandbox's metadata as containerd's CRI plugin keeps it, amid the bolt file's bytes.
    sandbox = {"Version": "v1", "Metadata": {"ID": "abc", "NetNSPath": f"/var/run/netns/{OURS}"}}
    (bolt / "meta.db").write_bytes(b"\0" * 4096 + json.dumps(sandbox).encode() + b"\0" * 512)
    left = down_in(tmp_path / "state", netns)
    assert left == sorted([THEIRS, PREFIX_OF_OURS])
    assert sorted(p.name for p in netns.iterdir()) == sorted([THEIRS, PREFIX_OF_OURS, "not-cni"])


KILL = (
    "import json, sys\nfrom pathlib import Path\nfrom deploy.kube.cleanup import kill_pod_processes\n"
    "print(json.dumps(kill_pod_processes(Path(sys.argv[1]), seconds=0.2)))"
)


def test_down_kills_what_the_pods_left_in_the_kubelets_cgroups_and_nothing_else(
    tmp_path: Path,
) -> None:
    """A pod whose shim died (containerd killed, say) leaves its processes to init; they
    hold its network namespace and veth. down kills every process in the kubelet's cgroups,
    in any hierarchy, and none in another cgroup."""
    pod = subprocess.Popen(["sleep", "300"])
    other = subprocess.Popen(["sleep", "300"])
    try:
        ours = tmp_path / "cgroup" / "pids" / "oltplab" / "kubepods" / "pod-a" / "c"
        ours.mkdir(parents=True)
        (ours / "cgroup.procs").write_text(f"{pod.pid}\n")
        theirs = tmp_path / "cgroup" / "pids" / "system.slice"
        theirs.mkdir(parents=True)
        (theirs / "cgroup.procs").write_text(f"{other.pid}\n")
        (tmp_path / "cgroup" / "memory" / "oltplab").mkdir(parents=True)  # no process there
        done = subprocess.run(
            [sys.executable, "-c", KILL, str(tmp_path / "cgroup")],
            cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == [pod.pid]
        assert pod.wait(timeout=10) == -9
        assert other.poll() is None
    finally:
        for process in (pod, other):
            process.kill()
            process.wait()
