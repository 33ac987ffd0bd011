"""A database server inside the cluster, as the Kubernetes report deployed its MySQL: one
pod of a StatefulSet in which oltplab serves an engine of the catalog from the pods' image
(`oltplab engines serve`, provisioned by its family as a run would), its datadir on the
node's own disk, behind a headless Service, the benchmark account's password in a Secret.
oltplab then measures it as an endpoint, by the Service's DNS name.

    python3 -m deploy.kube.database ENGINE IMAGE --namespace NS [--cpu 1 --memory 1Gi]

applies the Secret, the Service and the StatefulSet with the cluster's admin kubeconfig,
waits for the server to answer and prints the endpoint and the Secret to give `oltplab
submit k8s` (--env-from-secret).
"""

from __future__ import annotations

import argparse
import secrets
import sys
import time
from typing import Any

from deploy.kube.image import USER_ID
from deploy.kube.layout import DOMAIN, ClusterError, exit_status, state_dir
from oltplab.kube.client import apply, connect
from oltplab.kube.pods import restricted_container, restricted_pod
from oltplab.kube.waiting import stuck
from oltplab.spec.catalog import CATALOG

NAME = "oltplab-db"
USER = "sbtest"
PASSWORD_ENV = "OLTPLAB_DB_PASSWORD"  # the Secret's key: the pods' variable of that name


def port_of(engine: str) -> int:
    """The port its family's servers listen on by convention."""
    if engine not in CATALOG:
        raise ClusterError(f"engine {engine}: not in the catalog (oltplab engines list)")
    return 5432 if CATALOG[engine].family == "postgresql" else 3306


def serving(engine: str, port: int, buffer_pool: str) -> list[str]:
    """oltplab itself runs the server, as its family provisions one for a run: the option
    file from the intent, the datadir made once, the benchmark account's rights on sbtest
    only; the password from the Secret, through the environment."""
    return ["oltplab", "engines", "serve", engine, "--datadir", "/data/engine",
            "--password-env", PASSWORD_ENV, "--port", str(port),
            "--buffer-pool", buffer_pool]  # fmt: skip


def manifests(
    engine: str, image: str, namespace: str, cpu: str, memory: str, password: str
) -> list[dict[str, Any]]:
    labels = {"app.kubernetes.io/name": NAME, "oltplab/engine": engine}
    port = port_of(engine)
    container = {
        "name": "server",
        "image": image,
        "imagePullPolicy": "Never",
        "command": serving(engine, port, "128M"),
        "env": [
            {
                "name": PASSWORD_ENV,
                "valueFrom": {"secretKeyRef": {"name": NAME, "key": PASSWORD_ENV}},
            }
        ],
        "ports": [{"name": "server", "containerPort": port}],
        "resources": {
            "requests": {"cpu": cpu, "memory": memory},
            "limits": {"cpu": cpu, "memory": memory},
        },
        "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 2},
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        "securityContext": restricted_container(),
    }
    pod = {
        "metadata": {"labels": labels},
        "spec": {
            "securityContext": restricted_pod(USER_ID),
            "automountServiceAccountToken": False,
            "containers": [container],
            # The datadir on the node's own disk.
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }
    meta = {"name": NAME, "namespace": namespace, "labels": labels}
    return [
        {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque",
         "stringData": {PASSWORD_ENV: password}},
        {"apiVersion": "v1", "kind": "Service", "metadata": meta,
         "spec": {"clusterIP": "None", "selector": labels,
                  "ports": [{"name": "server", "port": port}]}},
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
    # 24 characters of A-Z, a-z, 0-9, _ and -: what `engines serve` takes.
    apply(api, manifests(engine, image, namespace, cpu, memory, secrets.token_urlsafe(18)))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            found = api.core.read_namespaced_pod(f"{NAME}-0", namespace)
        except api.error:
            time.sleep(2)  # the StatefulSet has not made it yet
            continue
        pod = api.client.sanitize_for_serialization(found)
        if any(c.get("ready") for c in pod.get("status", {}).get("containerStatuses", [])):
            return f"{NAME}.{namespace}.svc.{DOMAIN}:{port_of(engine)}"
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
