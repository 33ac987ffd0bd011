"""Kubernetes for real: the project's one-node cluster (scripts/kube-up.sh) built from the
pinned release and started here, Pod Security enforced by its API server, `oltplab submit
k8s` running shards as pods of an Indexed Job with results on a PersistentVolume, `status`
reading the live Job, `merge` and `report` over what the pods wrote, no socket to an
address beyond this machine, and a cluster that stops whole."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from oltplab.distribute.kubernetes import Kubernetes, Request, job_manifest
from oltplab.distribute.layout import read_distributed
from oltplab.engines.cache import cache_root
from tests.support.cli import oltplab
from tests.support.engines import cells
from tests.support.kube_cluster import ROOT, kube_cluster, sockets_beyond_this_machine
from tests.support.scheduler_contract import check_scheduler, distributed_run

pytestmark = pytest.mark.kubernetes

TINY = ROOT / "examples" / "kubernetes-tiny.toml"
POD_USER = 10001
# The pods' runs leave out the engine summary (2-5 s a session): no check here reads it.
QUICK_TELEMETRY = "default,-pt-mysql-summary"
STUCK = re.compile(
    r"\((ErrImage\w*|ImagePullBackOff|InvalidImageName|Create\w*Error|CrashLoopBackOff)\)"
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, str]]:
    """The cluster, stopped as after a crash: containerd and the kubelet killed while the
    database's pod still runs, so that `down` itself must find and remove what the pods
    left (their processes, network namespaces, veths, cgroups); kube_cluster then checks
    that nothing is left on this machine."""
    # In oltplab's cache, not among the tests' results: its image's files are no results.
    state = cache_root() / "kube" / "test-cluster"
    with kube_cluster(state) as running:
        try:
            yield {**running, "state": str(state)}
        finally:
            for component in ("containerd", "kubelet"):
                pid = int((state / "pids" / component).read_text().split()[0])
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module", autouse=True)
def image_build(
    cluster: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """deploy.kube.image for the tiny spec's engine, started with the module's first
    test: the longest part of this module (2-5 minutes on a busy host), done while the tests
    that need no image run. Its engine is fetched first: the image copies this machine's
    cache, and this module may run alone."""
    fetched = oltplab("engines", "fetch", "--spec", str(TINY), *_engines(TINY), cwd=ROOT)
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    said = tmp_path_factory.mktemp("image") / "image.out"
    with said.open("w") as sink:
        building = subprocess.Popen(
            ["python3", "-m", "deploy.kube.image", str(TINY)],
            env=_env(cluster), stdout=sink, stderr=subprocess.STDOUT, cwd=ROOT,
        )  # fmt: skip
    try:
        yield building, said
    finally:
        if building.poll() is None:
            building.kill()
        building.wait()


@pytest.fixture(scope="module")
def image(image_build: tuple[subprocess.Popen[bytes], Path]) -> str:
    """The pods' image, built for this checkout and the tiny spec's engine, in containerd."""
    building, said = image_build
    code = building.wait(timeout=1800)
    output = said.read_text()
    assert code == 0, output
    named = re.search(r"^image (\S+) in the cluster's containerd", output, re.MULTILINE)
    assert named, output
    return named.group(1)


def _shortened(spec: Path, folder: Path) -> Path:
    """The example as it is, its cells shortened: 2 s measured after 1 s of warm-up."""
    text = spec.read_text()
    for long, short in (("measure_seconds = 5", "measure_seconds = 2"),
                        ("warmup_ro_seconds = 2", "warmup_ro_seconds = 1"),
                        ("warmup_rw_seconds = 2", "warmup_rw_seconds = 1")):  # fmt: skip
        assert long in text, long
        text = text.replace(long, short)
    shortened = folder / spec.name
    shortened.write_text(text)
    return shortened


def _shards_said(volume: Path) -> list[str]:
    """What `status` shows as each shard's scheduler state, through the scheduler itself
    (the table may wrap a long state); KUBECONFIG set by the test."""
    distributed = read_distributed(volume)
    return [state.said for state in Kubernetes().states(distributed).values()]


def _stuck(volume: Path) -> list[str]:
    return [said for said in _shards_said(volume) if STUCK.search(said)]


def _engines(spec: Path) -> list[str]:
    return [engine["name"] for engine in tomllib.loads(spec.read_text())["engines"]]


def _env(cluster: dict[str, str]) -> dict[str, str]:
    return {**os.environ, "KUBECONFIG": cluster["KUBECONFIG"],
            "OLTPLAB_KUBE_STATE": cluster["state"]}  # fmt: skip


def client(cluster: dict[str, str]) -> tuple[object, object]:
    from kubernetes import client as api
    from kubernetes import config

    config.load_kube_config(cluster["KUBECONFIG"])
    return api.CoreV1Api(), api.BatchV1Api()


def restricted_namespace(core: object, name: str) -> None:
    from kubernetes.client.rest import ApiException

    try:
        core.create_namespace(  # type: ignore[attr-defined]
            {
                "metadata": {
                    "name": name,
                    "labels": {
                        "pod-security.kubernetes.io/enforce": "restricted",
                        "pod-security.kubernetes.io/enforce-version": "v1.31",
                    },
                }
            }
        )
    except ApiException as exc:
        assert exc.status == 409, exc  # made by an earlier test of this module
    # Pods are admitted once the namespace's service account exists (a controller makes it).
    deadline = time.monotonic() + 60
    while not core.list_namespaced_service_account(name).items:  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, f"no service account in namespace {name}"
        time.sleep(0.5)


def test_one_node_becomes_ready_and_says_how_long_it_took(cluster: dict[str, str]) -> None:
    core, _ = client(cluster)
    (node,) = core.list_node().items  # type: ignore[attr-defined]
    ready = {c.type: c.status for c in node.status.conditions}["Ready"]
    assert ready == "True" and node.status.node_info.kubelet_version == "v1.31.4"
    assert "s from start to a Ready node" in cluster["said"]


def test_the_api_server_refuses_a_pod_that_breaks_restricted(cluster: dict[str, str]) -> None:
    """A pod as most are written (no security context) is refused in a namespace that
    enforces "restricted"; oltplab's own pod, as its Job makes it, is admitted there."""
    from kubernetes.client.rest import ApiException

    core, _ = client(cluster)
    restricted_namespace(core, "admission")
    plain = {
        "metadata": {"name": "plain"},
        "spec": {"containers": [{"name": "c", "image": "oltplab.local/pause:3.10"}]},
    }
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod("admission", plain)  # type: ignore[attr-defined]
    assert refused.value.status == 403 and "violates PodSecurity" in refused.value.body
    assert "runAsNonRoot" in refused.value.body
    request = Request("oltplab.local/pause:3.10", "absent", cpu="100m", memory="64Mi")
    ours = job_manifest(request, "admitted", "admitted", 1, [1])["spec"]["template"]
    ours["metadata"]["name"] = "oltplab-shard"
    # Admitted (its claim does not exist, so it never runs: admission is the point here).
    core.create_namespaced_pod("admission", ours)  # type: ignore[attr-defined]


def test_a_shard_whose_image_the_node_lacks_says_why_in_status(
    cluster: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pod that will never start reads as such in `status`, not as a shard merely
    Pending; `cancel` then removes its Job. The node's image pull goes nowhere beyond
    this machine."""
    env = _env(cluster)
    monkeypatch.setenv("KUBECONFIG", cluster["KUBECONFIG"])
    core, _ = client(cluster)
    restricted_namespace(core, "missing")
    volume = tmp_path / "volume"
    _volume(core, "missing-image", volume, namespace="missing")
    submitted = oltplab(
        "submit", "k8s", str(TINY), "--shards", "1", "--results", str(volume),
        "--image", "oltplab.local/absent:0", "--storage", "missing-image",
        "--namespace", "missing", "--engine-cache", "image", "--cpu", "100m",
        "--memory", "256Mi", cwd=tmp_path, env=env,
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    deadline = time.monotonic() + 120
    while not _stuck(volume):
        assert time.monotonic() < deadline, _shards_said(volume)
        time.sleep(2)
    assert _stuck(volume)[0] in ("Pending (ErrImagePull)", "Pending (ImagePullBackOff)")
    # The pull went to the refusing proxy on loopback, never to a registry by name.
    log = (Path(cluster["state"]) / "logs" / "containerd.log").read_text()
    assert "proxyconnect tcp: dial tcp 127.0.0.1:1: connect: connection refused" in log
    assert oltplab("status", str(volume), cwd=tmp_path, env=env).returncode == 0
    cancelled = oltplab("cancel", str(volume), cwd=tmp_path, env=env)
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    while any(s.active for s in Kubernetes().states(read_distributed(volume)).values()):
        assert time.monotonic() < deadline + 60, _shards_said(volume)
        time.sleep(1)


def _volume(core: object, name: str, path: Path, namespace: str = "bench") -> None:
    """A hostPath PersistentVolume for the run's directory, and the claim bound to it; the
    directory the pods' user's."""
    path.mkdir()
    os.chown(path, POD_USER, POD_USER)
    core.create_persistent_volume(  # type: ignore[attr-defined]
        {
            "metadata": {"name": name},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "hostPath": {"path": str(path), "type": "Directory"},
                "persistentVolumeReclaimPolicy": "Retain",
            },
        }
    )
    core.create_namespaced_persistent_volume_claim(  # type: ignore[attr-defined]
        namespace,
        {
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": name,
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )


def test_submit_k8s_runs_every_shard_as_a_pod_and_merges(
    cluster: dict[str, str], image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = _env(cluster)
    monkeypatch.setenv("KUBECONFIG", cluster["KUBECONFIG"])
    core, batch = client(cluster)
    restricted_namespace(core, "bench")
    volume = tmp_path / "volume"
    _volume(core, "results", volume)

    seen: list[str] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen.extend(sockets_beyond_this_machine())
            time.sleep(1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    # The example's first and last mix, one a shard, cut short (its three are run by the
    # next test).
    spec = _shortened(TINY, tmp_path)
    spec.write_text(spec.read_text().replace('"balanced", ', ""))
    try:
        submitted = oltplab(
            "submit", "k8s", str(spec), "--shards", "2", "--results", str(volume),
            "--image", image, "--storage", "results", "--namespace", "bench",
            "--engine-cache", "image", "--cpu", "1", "--memory", "1Gi",
            "--run-arg", f"--telemetry={QUICK_TELEMETRY}", cwd=tmp_path, env=env,
        )  # fmt: skip
        assert submitted.returncode == 0, submitted.stdout + submitted.stderr
        assert "submitted k8s job" in submitted.stdout
        states = []
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            status = oltplab("status", str(volume), cwd=tmp_path, env=env)
            assert status.returncode == 0, status.stderr
            states.append(status.stdout)
            job = json.loads((volume / "distribute.json").read_text())["jobs"][0]["job"]
            said = batch.read_namespaced_job(job, "bench").status  # type: ignore[attr-defined]
            if (said.succeeded or 0) + (said.failed or 0) == 2:
                break
            # A pod that cannot start fails the test now, not at the deadline.
            assert not _stuck(volume), status.stdout
            time.sleep(3)
        assert said.succeeded == 2, said
    finally:
        stop.set()
        watcher.join()
    # The live Job as status saw it, then every cell done through merge and report.
    assert any("Running" in s or "Pending" in s for s in states), states[-1]
    merged = oltplab("merge", str(volume), "-o", str(tmp_path / "merged"), cwd=tmp_path)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    merged_cells = cells(tmp_path / "merged")
    assert {r["status"] for r in merged_cells} == {"done"}
    assert sorted(r["workload"] for r in merged_cells) == ["read-intensive", "write-intensive"]
    report = oltplab(
        "report", str(tmp_path / "merged"), "-o", str(tmp_path / "report"), cwd=tmp_path
    )
    assert report.returncode == 0, report.stderr
    assert seen == [], seen[:5]
    # The contract every scheduler passes: both shards active (one running, the other
    # waiting for the node), both cancelled, nothing left to cancel.
    contract = volume / "contract"
    contract.mkdir()
    os.chown(contract, POD_USER, POD_USER)
    check_scheduler(
        Kubernetes(image=image, claim="results", subpath="contract", namespace="bench",
                   cpu="1", memory="1Gi", engine_cache="image"),
        distributed_run(contract, "k8s"),
        timeout=120,
    )  # fmt: skip


def _wait_for_jobs(batch: object, volume: Path, deadline_seconds: float = 900) -> object:
    deadline = time.monotonic() + deadline_seconds
    job = json.loads((volume / "distribute.json").read_text())["jobs"][-1]
    while True:
        said = batch.read_namespaced_job(job["job"], job["namespace"]).status  # type: ignore[attr-defined]
        if said.succeeded or said.failed or time.monotonic() > deadline:
            return said
        assert not _stuck(volume), _shards_said(volume)
        time.sleep(3)


def test_a_database_in_the_cluster_is_driven_through_its_service(
    cluster: dict[str, str], image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report's topology: the server a StatefulSet behind a headless Service, oltplab's
    pod measuring it as an endpoint by the Service's DNS name, its password from the
    Secret, the mixes of the Kubernetes report in the results. Done as docs/how-to/
    sharding.md says, its storage from examples/kubernetes-storage.yaml (the node's folder
    here a temporary one): the namespace, the volume and the claim."""
    env = _env(cluster)
    monkeypatch.setenv("KUBECONFIG", cluster["KUBECONFIG"])
    _, batch = client(cluster)
    srv = tmp_path / "srv-bench"
    volume = srv / "endpoint"
    for folder in (srv, volume):  # install -d -o 10001 /srv/bench /srv/bench/endpoint
        folder.mkdir()
        os.chown(folder, POD_USER, -1)
    database = ["python3", "-m", "deploy.kube.database", "mariadb-10.11.5", image]
    refused = subprocess.run(
        [*database, "--namespace", "nowhere"], env=env, capture_output=True, text=True, cwd=ROOT
    )
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "namespace nowhere does not exist: make it first" in refused.stderr
    storage = (ROOT / "examples" / "kubernetes-storage.yaml").read_text()
    applied = subprocess.run(
        ["kubectl", "--kubeconfig", cluster["KUBECONFIG"], "apply", "-f", "-"],
        input=storage.replace("/srv/bench", str(srv)), capture_output=True, text=True,
    )  # fmt: skip
    assert applied.returncode == 0, applied.stdout + applied.stderr
    deployed = subprocess.run(
        [*database, "--namespace", "bench", "--cpu", "1", "--memory", "1Gi"],
        env=env, capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    assert "oltplab-db.bench.svc.cluster.local:3306" in deployed.stdout
    spec = _shortened(ROOT / "examples" / "kubernetes-endpoint.toml", tmp_path)
    submitted = oltplab(
        "submit", "k8s", str(spec), "--shards", "1", "--results", str(volume),
        "--subpath", "endpoint", "--image", image, "--storage", "bench-results",
        "--namespace", "bench",
        "--engine-cache", "image", "--env-from-secret", "oltplab-db", "--run-arg", "--prepare",
        "--run-arg", f"--telemetry={QUICK_TELEMETRY}", "--cpu", "500m", "--memory", "1Gi",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    said = _wait_for_jobs(batch, volume)
    assert said.succeeded == 1, said  # type: ignore[attr-defined]
    merged = oltplab("merge", str(volume), "-o", str(tmp_path / "merged"), cwd=tmp_path)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    rows = cells(tmp_path / "merged")
    assert {r["status"] for r in rows} == {"done"} and len(rows) == 3
    assert {r["workload"] for r in rows} == {"read-intensive", "balanced", "write-intensive"}
    report = oltplab(
        "report", str(tmp_path / "merged"), "-o", str(tmp_path / "report"), cwd=tmp_path
    )
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    # The version the server reports, and the pod it ran in with its limits.
    assert "10.11.5-MariaDB" in text, text[:2000]
    assert "Kubernetes pod oltplab-db-0 (node oltplab-node)" in text, text[:3000]
    assert "limits cpu 1, memory 1Gi" in text, text[:3000]
    # The password is in no file of the results.
    password = subprocess.run(
        ["kubectl", "--kubeconfig", cluster["KUBECONFIG"], "-n", "bench", "get", "secret",
         "oltplab-db", "-o", "jsonpath={.data.OLTPLAB_DB_PASSWORD}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    secret = base64.b64decode(password).decode()
    for path in [*volume.rglob("*"), *(tmp_path / "merged").rglob("*")]:
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
