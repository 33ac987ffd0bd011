"""Databases that real operators deploy on the project's cluster: CloudNativePG and
mariadb-operator built from their pinned modules (kube-up.sh --with-operators), their
databases brought to ready from examples/kubernetes-operators.yaml, and measured by
`oltplab submit k8s` beside the catalog's StatefulSet in one run.

The operators' builds take about ten minutes on a fresh two-core machine, which the
suite's half-hour cannot hold; this module runs when OLTPLAB_OPERATOR_TESTS=1:
    OLTPLAB_OPERATOR_TESTS=1 python3 -m pytest tests/engine/test_operators.py
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from oltplab.engines.cache import cache_root
from tests.support.cli import oltplab
from tests.support.engines import cells
from tests.support.kube_cluster import ROOT, kube_cluster, sockets_beyond_this_machine

pytestmark = [
    pytest.mark.kubernetes,
    pytest.mark.skipif(
        os.environ.get("OLTPLAB_OPERATOR_TESTS") != "1",
        reason="the operators' builds take ~10 min: OLTPLAB_OPERATOR_TESTS=1 runs this module",
    ),
]
POD_USER = 10001
SPEC = ROOT / "examples" / "kubernetes-operators.toml"
SECRETS = {  # each database's benchmark account, and mariadb-operator's root
    "pg-bench-app": "password", "mariadb-bench-sbtest": "password",
    "mariadb-bench-root": "password", "oltplab-db": "OLTPLAB_DB_PASSWORD",
}  # fmt: skip


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The cluster with both operators, the bench namespace's storage and both databases
    ready; stopped afterwards and checked to have left nothing."""
    state = cache_root() / "kube" / "operators-cluster"
    with kube_cluster(state) as running:
        env = {**os.environ, "KUBECONFIG": running["KUBECONFIG"], "OLTPLAB_KUBE_STATE": str(state)}
        env["PATH"] = f"{env['PATH']}:/usr/local/go/bin"
        installed = subprocess.run(
            ["python3", "-m", "deploy.kube.operators"],
            env=env, capture_output=True, text=True, timeout=3600, cwd=ROOT,
        )  # fmt: skip
        assert installed.returncode == 0, installed.stdout + installed.stderr
        srv = tmp_path_factory.mktemp("srv") / "bench"
        srv.mkdir()
        os.chown(srv, POD_USER, -1)
        storage = (ROOT / "examples" / "kubernetes-storage.yaml").read_text()
        kubectl(env, "apply", "-f", "-", given=storage.replace("/srv/bench", str(srv)))
        kubectl(env, "apply", "-f", str(ROOT / "examples" / "kubernetes-operators.yaml"))
        yield {**env, "said": installed.stdout, "srv": str(srv)}


def kubectl(env: dict[str, str], *args: str, given: str | None = None) -> str:
    done = subprocess.run(["kubectl", *args], env=env, input=given, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def secret(env: dict[str, str], name: str, key: str) -> str:
    import base64

    encoded = kubectl(env, "-n", "bench", "get", "secret", name, "-o", f"jsonpath={{.data.{key}}}")
    return base64.b64decode(encoded).decode()


def wait_ready(env: dict[str, str], resource: str, seconds: int = 300) -> None:
    kubectl(env, "-n", "bench", "wait", resource, "--for=condition=Ready", f"--timeout={seconds}s")


def test_both_operators_are_built_and_bring_their_databases_to_ready(
    cluster: dict[str, str],
) -> None:
    for said in ("cloudnative-pg v1.25.1: controller built", "mariadb-operator v25.10.2: "
                 "controller built", "database image oltplab.local/postgresql:15"):  # fmt: skip
        assert said in cluster["said"], cluster["said"]
    crds = kubectl(cluster, "get", "crd", "-o", "name")
    assert "clusters.postgresql.cnpg.io" in crds and "mariadbs.k8s.mariadb.com" in crds
    wait_ready(cluster, "cluster/pg-bench")
    wait_ready(cluster, "mariadb/mariadb-bench")


def test_each_benchmark_account_has_rights_on_its_own_database_only(
    cluster: dict[str, str],
) -> None:
    wait_ready(cluster, "mariadb/mariadb-bench")
    wait_ready(cluster, "cluster/pg-bench")
    grants = kubectl(
        cluster, "-n", "bench", "exec", "mariadb-bench-0", "--", "bash", "-c",
        "mariadb --defaults-extra-file=<(printf '[client]\\nuser=root\\npassword=%s\\n' "
        "\"$MARIADB_ROOT_PASSWORD\") -N -e 'SHOW GRANTS FOR sbtest'",
    )  # fmt: skip
    assert "ON `sbtest`.* TO `sbtest`@`%`" in grants and "ALL PRIVILEGES ON *.*" not in grants
    role = kubectl(
        cluster, "-n", "bench", "exec", "pg-bench-1", "-c", "postgres", "--", "psql", "-At",
        "-c", "SELECT rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = 'sbtest'",
    )  # fmt: skip
    assert role.strip() == "f|f|f"


@pytest.fixture(scope="module")
def image(cluster: dict[str, str]) -> str:
    """The pods' image, carrying the catalog's engine that the StatefulSet runs."""
    built = subprocess.run(
        ["python3", "-m", "deploy.kube.image", str(SPEC), "--engine",
         "mariadb-11.4.5"], env=cluster, capture_output=True, text=True, timeout=1800, cwd=ROOT,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    return built.stdout.split("image ", 1)[1].split()[0]


def submit(cluster: dict[str, str], spec: Path, image: str, folder: str, cwd: Path) -> Path:
    volume = Path(cluster["srv"]) / folder
    volume.mkdir()
    os.chown(volume, POD_USER, -1)
    submitted = oltplab(
        "submit", "k8s", str(spec), "--shards", "1", "--results", str(volume),
        "--subpath", folder, "--image", image, "--storage", "bench-results",
        "--namespace", "bench", "--engine-cache", "image", "--env-from-secret",
        "oltplab-db", "--run-arg", "--prepare", "--cpu", "300m", "--memory", "1Gi",
        cwd=cwd, env=cluster,
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    return volume


def wait_for_job(cluster: dict[str, str], volume: Path, seconds: float = 900) -> str:
    """The Job's condition once it ended: Complete or Failed."""
    deadline = time.monotonic() + seconds
    job = yaml.safe_load((volume / "distribute.json").read_text())["jobs"][-1]["job"]
    while time.monotonic() < deadline:
        ended = kubectl(cluster, "-n", "bench", "get", "job", job, "-o",
                        "jsonpath={.status.conditions[?(@.status=='True')].type}")  # fmt: skip
        if "Complete" in ended or "Failed" in ended:
            return ended
        time.sleep(3)
    raise AssertionError(f"job {job} still runs after {seconds:.0f} s")


def watch_processes(passwords: list[str], seen: list[str], stop: threading.Event) -> None:
    """Every process's command line on this machine, pods' included, five times a second."""
    while not stop.wait(0.2):
        for entry in Path("/proc").iterdir():
            try:
                argv = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
            except OSError:
                continue
            if any(p.encode() in argv for p in passwords):
                seen.append(argv.replace(b"\0", b" ")[:80].decode(errors="replace"))


def test_submit_measures_both_operators_and_the_statefulset_in_one_run(
    cluster: dict[str, str], image: str, tmp_path: Path
) -> None:
    wait_ready(cluster, "cluster/pg-bench")
    wait_ready(cluster, "mariadb/mariadb-bench")
    database = subprocess.run(
        ["python3", "-m", "deploy.kube.database", "mariadb-11.4.5", image,
         "--namespace", "bench", "--cpu", "500m", "--memory", "768Mi"],
        env=cluster, capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert database.returncode == 0, database.stdout + database.stderr
    passwords = [secret(cluster, name, key) for name, key in SECRETS.items()]
    seen: list[str] = []
    watching = threading.Event()
    watcher = threading.Thread(target=watch_processes, args=(passwords, seen, watching))
    watcher.start()
    try:
        volume = submit(cluster, SPEC, image, "operators", tmp_path)
        status = oltplab("status", str(volume), cwd=tmp_path, env=cluster)
        assert "Kubernetes Cluster bench/pg-bench ready" in status.stdout, status.stdout
        assert "Complete" in wait_for_job(cluster, volume)
        assert sockets_beyond_this_machine() == []
    finally:
        watching.set()
        watcher.join()
    assert seen == [], "a password in a process's command line"
    merged = tmp_path / "merged"
    assert oltplab("merge", str(volume), "-o", str(merged), cwd=tmp_path).returncode == 0
    rows = cells(merged)
    assert len(rows) == 18 and {r["status"] for r in rows} == {"done"}, rows
    report = oltplab("report", str(merged), "-o", str(tmp_path / "report"), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    for said in ("cloudnative-pg 1.25.1, Cluster bench/pg-bench", "| 15.18 |",
                 "mariadb-operator 25.10.2, MariaDB bench/mariadb-bench", "| 11.4.5-MariaDB |",
                 "pod pg-bench-1 on node", "Kubernetes pod oltplab-db-0"):  # fmt: skip
        assert said in text, said
    for path in [*volume.rglob("*"), *merged.rglob("*"), *(tmp_path / "report").rglob("*")]:
        if path.is_file():
            assert not any(p.encode() in path.read_bytes() for p in passwords), path


MISSING = """name = "operator-failure"
workloads = ["read-intensive"]
[[engines]]
name = "mariadb-missing"
source = { kubernetes = { kind = "MariaDB", name = "mariadb-missing", namespace = "bench" } }
[[engines]]
name = "cloudnative-pg"
source = { kubernetes = { kind = "Cluster", name = "pg-bench", namespace = "bench" } }
[dataset]
tables = 2
table_size = 2000
[protocol]
warmup_ro_seconds = 1
warmup_rw_seconds = 1
warmup_threads = 2
measure_seconds = 3
threads = [2]
"""


def test_a_mariadb_whose_image_the_node_lacks_fails_its_own_cells_only(
    cluster: dict[str, str], image: str, tmp_path: Path
) -> None:
    documents = yaml.safe_load_all((ROOT / "examples" / "kubernetes-operators.yaml").read_text())
    [mariadb] = [d for d in documents if d["kind"] == "MariaDB"]
    mariadb["metadata"]["name"] = "mariadb-missing"
    mariadb["spec"]["image"] = "oltplab.local/mariadb:0.0-absent"
    mariadb["spec"]["rootPasswordSecretKeyRef"]["name"] = "mariadb-missing-root"
    mariadb["spec"]["passwordSecretKeyRef"]["name"] = "mariadb-missing-sbtest"
    mariadb["spec"]["resources"] = {"requests": {"cpu": "100m", "memory": "256Mi"}}
    created = time.monotonic()
    kubectl(cluster, "apply", "-f", "-", given=yaml.safe_dump(mariadb))
    wait_ready(cluster, "cluster/pg-bench")
    spec = tmp_path / "missing.toml"
    spec.write_text(MISSING)
    volume = submit(cluster, spec, image, "missing", tmp_path)
    expected = "Kubernetes MariaDB bench/mariadb-missing not ready: "
    while True:
        said = oltplab("status", str(volume), cwd=tmp_path, env=cluster).stdout
        if "ErrImageNeverPull" in said:
            break
        assert time.monotonic() - created < 60, said
        time.sleep(2)
    assert expected in said, said
    wait_for_job(cluster, volume)
    rows = {r["engine"]: r for r in cells(volume / "shard-1")}
    assert rows["cloudnative-pg"]["status"] == "done"
    assert rows["mariadb-missing"]["status"] == "failed"
    assert "ErrImageNeverPull" in rows["mariadb-missing"]["reason"], rows["mariadb-missing"]
