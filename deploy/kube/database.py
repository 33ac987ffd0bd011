"""A database server inside the cluster, as the Kubernetes report deployed its MySQL: one
pod of a StatefulSet running an engine of the catalog from the pods' image, its datadir on
the node's own disk, behind a headless Service, the benchmark account's password in a
Secret. oltplab then measures it as an endpoint, by the Service's DNS name.

    python3 -m deploy.kube.database ENGINE IMAGE --namespace NS [--cpu 1 --memory 1Gi]

applies the Secret, the Service and the StatefulSet with the cluster's admin kubeconfig,
waits for the server to answer and prints the endpoint and the Secret to give `oltplab
submit k8s` (--env-from-secret).
"""

from __future__ import annotations

import argparse
import json
import secrets
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from deploy.kube.image import CACHE, USER_ID
from deploy.kube.layout import DOMAIN, ClusterError, cache_root, exit_status, state_dir
from oltplab.kube.client import apply, connect
from oltplab.kube.pods import restricted_container, restricted_pod
from oltplab.kube.waiting import stuck

NAME = "oltplab-db"
PORT = 3306
USER = "sbtest"
PASSWORD_ENV = "OLTPLAB_DB_PASSWORD"  # the Secret's key: the pods' variable of that name


def in_image(engine: str) -> dict[str, str]:
    """The engine's programs where the image keeps them (its copy of this machine's cache)."""
    for manifest in (cache_root() / "engines").glob("*/manifest.json"):
        found = json.loads(manifest.read_text())
        if found["engine"] != engine:
            continue
        folder = manifest.parent.name
        keys = ("basedir", "server", "install_db", "messages_dir")
        return {k: _moved(found.get(k), folder) for k in keys}
    raise ClusterError(
        f"engine {engine}: not in this machine's cache; oltplab engines fetch {engine}"
    )


def _moved(path: str | None, folder: str) -> str:
    """A path of this machine's cache where the image's copy of the folder has it."""
    if not path:
        return ""
    parts = Path(path).parts
    return str(Path(CACHE, "engines", folder, *parts[parts.index(folder) + 1 :]))


def server_script(paths: dict[str, str], buffer_pool: str) -> str:
    """Initialise the datadir once, let the benchmark account in with the Secret's password,
    and run the server in the foreground on the pod's address."""
    base, server = shlex.quote(paths["basedir"]), shlex.quote(paths["server"])
    if paths["install_db"]:  # MariaDB's script
        initialise = (
            f"{shlex.quote(paths['install_db'])} --no-defaults --basedir={base} "
            "--datadir=/data/db --auth-root-authentication-method=normal --skip-test-db "
            "--skip-name-resolve"
        )
    else:  # MySQL initialises with the server itself
        initialise = (
            f"{server} --no-defaults --basedir={base} --datadir=/data/db --initialize-insecure"
        )
    messages = (
        f" --lc-messages-dir={shlex.quote(paths['messages_dir'])}" if paths["messages_dir"] else ""
    )
    grant = (
        f"CREATE DATABASE IF NOT EXISTS {USER};\\n"
        f"CREATE USER IF NOT EXISTS '{USER}'@'%%' IDENTIFIED BY '%s';\\n"
        f"GRANT ALL ON {USER}.* TO '{USER}'@'%%';\\n"
    )
    return "\n".join([
        "set -eu",
        f"[ -d /data/db ] || {initialise} > /data/initialise.log 2>&1",
        # printf is the shell's own: the password is on no process's command line.
        f'printf "{grant}" "${PASSWORD_ENV}" > /secrets/init.sql',
        f"exec {server} --no-defaults --basedir={base} --datadir=/data/db --port={PORT} "
        f"--bind-address=0.0.0.0 --socket=/tmp/server.sock --skip-name-resolve{messages} "
        f"--init-file=/secrets/init.sql --innodb-buffer-pool-size={buffer_pool}",
    ])  # fmt: skip


def manifests(
    engine: str, image: str, namespace: str, cpu: str, memory: str, password: str
) -> list[dict[str, Any]]:
    labels = {"app.kubernetes.io/name": NAME, "oltplab/engine": engine}
    container = {
        "name": "server",
        "image": image,
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", server_script(in_image(engine), "128M")],
        "env": [
            {
                "name": PASSWORD_ENV,
                "valueFrom": {"secretKeyRef": {"name": NAME, "key": PASSWORD_ENV}},
            }
        ],
        "ports": [{"name": "mysql", "containerPort": PORT}],
        "resources": {
            "requests": {"cpu": cpu, "memory": memory},
            "limits": {"cpu": cpu, "memory": memory},
        },
        "readinessProbe": {"tcpSocket": {"port": PORT}, "periodSeconds": 2},
        "volumeMounts": [
            {"name": "data", "mountPath": "/data"},
            {"name": "secrets", "mountPath": "/secrets"},
        ],
        "securityContext": restricted_container(),
    }
    pod = {
        "metadata": {"labels": labels},
        "spec": {
            "securityContext": restricted_pod(USER_ID),
            "automountServiceAccountToken": False,
            "containers": [container],
            # The datadir on the node's own disk; the password file in memory only.
            "volumes": [
                {"name": "data", "emptyDir": {}},
                {"name": "secrets", "emptyDir": {"medium": "Memory"}},
            ],
        },
    }
    meta = {"name": NAME, "namespace": namespace, "labels": labels}
    return [
        {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque",
         "stringData": {PASSWORD_ENV: password}},
        {"apiVersion": "v1", "kind": "Service", "metadata": meta,
         "spec": {"clusterIP": "None", "selector": labels,
                  "ports": [{"name": "mysql", "port": PORT}]}},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta,
         "spec": {"serviceName": NAME, "replicas": 1, "selector": {"matchLabels": labels},
                  "template": pod}},
    ]  # fmt: skip


def deploy(engine: str, image: str, namespace: str, cpu: str, memory: str) -> str:
    """The server applied and answering; its endpoint by the Service's name."""
    api = connect(state_dir() / "admin.kubeconfig")
    try:
        api.core.read_namespace(namespace)
    except api.error:
        raise ClusterError(
            f"namespace {namespace} does not exist: make it first (kubectl apply -f "
            "examples/kubernetes-storage.yaml makes `bench`, with the claim oltplab's pods "
            "write their results to)"
        ) from None
    apply(api, manifests(engine, image, namespace, cpu, memory, secrets.token_urlsafe(24)))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            found = api.core.read_namespaced_pod(f"{NAME}-0", namespace)
        except api.error:
            time.sleep(2)  # the StatefulSet has not made it yet
            continue
        pod = api.client.sanitize_for_serialization(found)
        if any(c.get("ready") for c in pod.get("status", {}).get("containerStatuses", [])):
            return f"{NAME}.{namespace}.svc.{DOMAIN}:{PORT}"
        if reason := stuck(pod):
            raise ClusterError(f"{NAME}-0 in namespace {namespace} cannot start: {reason}")
        time.sleep(2)
    raise ClusterError(
        f"{NAME}-0 in namespace {namespace} not ready after 300 s: "
        f"kubectl -n {namespace} describe pod {NAME}-0; kubectl -n {namespace} logs {NAME}-0"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("engine", help="an engine of the catalog, in the image")
    parser.add_argument("image", help="the pods' image (deploy.kube.image prints it)")
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--cpu", default="1", help="the server pod's CPU request and limit")
    parser.add_argument("--memory", default="1Gi", help="its memory request and limit")
    given = parser.parse_args()

    def run() -> None:
        endpoint = deploy(given.engine, given.image, given.namespace, given.cpu, given.memory)
        print(f"endpoint {endpoint} (user {USER}, password_env {PASSWORD_ENV})")
        print(f"next: oltplab submit k8s SPEC ... --env-from-secret {NAME} --run-arg --prepare")

    return exit_status("kube database", run)


if __name__ == "__main__":
    sys.exit(main())
