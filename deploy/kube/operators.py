"""The operators that deploy databases on the cluster, as their users install them: each
at a pinned version, its controller built from its own Go module (deploy/kube/operators/NAME
holds the go.mod and go.sum that pin it), its CRDs and manifests read from that module's
files, and its image built here under the name those manifests run it by. Nothing is pulled.

- CloudNativePG (PostgreSQL): the module's release manifest, applied as it is.
- mariadb-operator (MariaDB): the module's CRDs and the controller's own RBAC rules
  (config/rbac); its Deployment and environment as its Helm chart's defaults render them,
  written here as there is no Helm. Its admission webhook (a second Deployment with a
  certificate controller) is left out: the controller runs with --webhook off, its default.

    python3 -m deploy.kube.operators     # on a running cluster (or: kube-up.sh --with-operators)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from deploy.kube.api import admin
from deploy.kube.database_images import database_images
from deploy.kube.layout import HERE, ClusterError, cache_root, exit_status, go_command, state_dir
from deploy.kube.runtime import binary_image, import_image
from oltplab.kube.client import apply
from oltplab.kube.waiting import stuck

NAMESPACE_OF_MARIADB_OPERATOR = "mariadb-operator"
STORAGE_CLASS = "oltplab-local"
VOLUMES = 4  # hostPath volumes of the storage class: one per database pod, with room to spare
VOLUME_SIZE = "4Gi"


@dataclass(frozen=True)
class Operator:
    name: str
    module: str  # its Go module's path
    command: str  # the package of its controller's command
    image: str  # what its manifests run it as
    binary: str  # where its image keeps the controller
    user: str  # whom its image runs as
    aliases: tuple[str, ...] = ()  # other paths its manifests run the controller by

    @property
    def folder(self) -> Path:
        return HERE / "operators" / self.name

    @property
    def version(self) -> str:
        """The version go.mod pins."""
        pinned = re.search(
            rf"^\s*{re.escape(self.module)} (v\S+)", (self.folder / "go.mod").read_text(), re.M
        )
        if pinned is None:
            raise ClusterError(f"{self.folder / 'go.mod'}: does not require {self.module}")
        return pinned.group(1)


CLOUDNATIVE_PG = Operator(
    "cloudnative-pg",
    "github.com/cloudnative-pg/cloudnative-pg",
    "github.com/cloudnative-pg/cloudnative-pg/cmd/manager",
    "ghcr.io/cloudnative-pg/cloudnative-pg:1.25.1",
    # Its image keeps one instance manager per architecture, operator/manager_ARCH, which
    # the controller lists (pkg/utils/discovery.go) and copies into each database pod.
    "/operator/manager_amd64",
    "65532:65532",
    ("/manager",),
)
MARIADB_OPERATOR = Operator(
    "mariadb-operator",
    "github.com/mariadb-operator/mariadb-operator/v25",
    "github.com/mariadb-operator/mariadb-operator/v25/cmd/controller",
    "docker-registry3.mariadb.com/mariadb-operator/mariadb-operator:25.10.2",
    "/bin/mariadb-operator",
    "65532:65532",
)
OPERATORS = (CLOUDNATIVE_PG, MARIADB_OPERATOR)


def go_env() -> dict[str, str]:
    # The checksum database does not list mariadb-operator's v25 releases: go.sum pins them.
    return {
        **os.environ,
        "CGO_ENABLED": "0",
        "GOFLAGS": "-mod=readonly -buildvcs=false",
        "GONOSUMDB": "github.com/mariadb-operator",
    }


def module_dir(operator: Operator) -> Path:
    """The pinned module's own files, in Go's module cache."""
    found = subprocess.run(
        [go_command(), "mod", "download", "-json", operator.module],
        cwd=operator.folder, env=go_env(), capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return Path(json.loads(found)["Dir"])


def build(operator: Operator) -> tuple[Path, float | None, bool]:
    """The controller in the cache, built once per pin; the seconds that build took (kept
    beside it), and whether it was built before this call."""
    binary = cache_root() / "kube" / "operators" / f"{operator.name}-{operator.version}"
    took = binary.parent / f"{binary.name}.build-seconds"
    if binary.exists():
        return binary, float(took.read_text()) if took.exists() else None, True
    binary.parent.mkdir(parents=True, exist_ok=True)
    print(f"building {operator.name} {operator.version} ({operator.command}) ...", flush=True)
    started = time.monotonic()
    partial = binary.with_suffix(".partial")
    subprocess.run(
        [go_command(), "build", "-trimpath", "-o", str(partial), operator.command],
        cwd=operator.folder, env=go_env(), check=True,
    )  # fmt: skip
    seconds = time.monotonic() - started
    took.write_text(f"{seconds:.0f}\n")
    partial.rename(binary)
    return binary, seconds, False


def apply_all(state: Path, documents: list[dict[str, Any]] | str) -> None:
    """Objects, or a manifest's text, applied as the cluster's administrator."""
    found = list(yaml.safe_load_all(documents)) if isinstance(documents, str) else documents
    apply(admin(state), found)


def cloudnative_pg_manifests(source: Path, operator: Operator) -> str:
    return (source / "releases" / f"cnpg-{operator.version.lstrip('v')}.yaml").read_text()


def mariadb_operator_manifests(source: Path, operator: Operator) -> list[dict[str, Any]]:
    """Its CRDs and RBAC from the module; the Deployment the chart renders by default."""
    crds = list(yaml.safe_load_all((source / "deploy" / "crds" / "crds.yaml").read_text()))
    role = yaml.safe_load((source / "config" / "rbac" / "role.yaml").read_text())
    chart = source / "deploy" / "charts" / "mariadb-operator"
    values = yaml.safe_load((chart / "values.yaml").read_text())["config"]
    name, namespace = operator.name, NAMESPACE_OF_MARIADB_OPERATOR
    role["metadata"] = {"name": name}
    labels = {"app.kubernetes.io/name": name}
    environment = {
        "MARIADB_OPERATOR_IMAGE": operator.image,
        "MARIADB_GALERA_LIB_PATH": values["galeraLibPath"],
        "MARIADB_DEFAULT_VERSION": values["mariadbDefaultVersion"],
        "RELATED_IMAGE_MARIADB": values["mariadbImage"],
        "RELATED_IMAGE_MARIADB_NAME": values["mariadbImageName"],
        "RELATED_IMAGE_MAXSCALE": values["maxscaleImage"],
        "RELATED_IMAGE_EXPORTER": values["exporterImage"],
        "RELATED_IMAGE_EXPORTER_MAXSCALE": values["exporterMaxscaleImage"],
    }
    container = {
        "name": "controller",
        "image": operator.image,
        "imagePullPolicy": "IfNotPresent",
        "args": ["--metrics-addr=:8080", "--log-level=INFO"],
        "envFrom": [{"configMapRef": {"name": f"{name}-env"}}],
        "env": [
            {"name": "CLUSTER_NAME", "value": "cluster.local"},
            {"name": "MARIADB_OPERATOR_NAME", **field("spec.serviceAccountName")},
            {"name": "MARIADB_OPERATOR_NAMESPACE", **field("metadata.namespace")},
            {"name": "MARIADB_OPERATOR_SA_PATH",
             "value": "/var/run/secrets/kubernetes.io/serviceaccount/token"},
        ],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }  # fmt: skip
    meta = {"name": name, "namespace": namespace}
    return [
        *crds,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        role,
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": name},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {**meta, "name": f"{name}-env"},
         "data": environment},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {**meta, "labels": labels},
         "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels},
                               "spec": {"serviceAccountName": name,
                                        "terminationGracePeriodSeconds": 10,
                                        "containers": [container]}}}},
    ]  # fmt: skip


def field(path: str) -> dict[str, Any]:
    """An environment variable's value from the pod's own fields."""
    return {"valueFrom": {"fieldRef": {"fieldPath": path}}}


def storage(state: Path) -> list[dict[str, Any]]:
    """Volumes the databases' claims bind to: folders of the cluster's state, on the one
    node, gone with it. The operators' pods run as their own users, so each folder is
    writable by any (a hostPath volume is not handed to a pod's group)."""
    documents: list[dict[str, Any]] = [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
         "metadata": {"name": STORAGE_CLASS},
         "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer",
         "reclaimPolicy": "Delete"},
    ]  # fmt: skip
    for index in range(VOLUMES):
        folder = state / "volumes" / f"volume-{index}"
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o777)
        documents.append(
            {"apiVersion": "v1", "kind": "PersistentVolume",
             "metadata": {"name": f"{STORAGE_CLASS}-{index}"},
             "spec": {"capacity": {"storage": VOLUME_SIZE}, "accessModes": ["ReadWriteOnce"],
                      "storageClassName": STORAGE_CLASS,
                      "persistentVolumeReclaimPolicy": "Retain",
                      "hostPath": {"path": str(folder), "type": "Directory"}}}
        )  # fmt: skip
    return documents


def wait_available(state: Path, namespace: str, deployment: str, seconds: float = 180) -> None:
    """Until the Deployment is available; a pod that cannot start ends the wait with why."""
    api = admin(state)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = api.apps.read_namespaced_deployment(deployment, namespace)
        if found.status.available_replicas:
            return
        for pod in api.core.list_namespaced_pod(namespace).items:
            if reason := stuck(api.client.sanitize_for_serialization(pod)):
                raise ClusterError(
                    f"{deployment} in {namespace}: {reason}; kubectl -n {namespace} logs "
                    f"{pod.metadata.name}"
                )
        time.sleep(2)
    raise ClusterError(
        f"{deployment} in {namespace} not available after {seconds:.0f} s: "
        f"kubectl -n {namespace} describe deployment {deployment}"
    )


def install_operators(state: Path) -> None:
    """Both operators built, imaged, installed and available, and their databases'
    images in the node's containerd; each build's time and each version said."""
    if not (state / "admin.kubeconfig").exists():
        raise ClusterError(f"no cluster in {state}: scripts/kube-up.sh starts one")
    apply_all(state, storage(state))
    for operator in OPERATORS:
        binary, seconds, cached = build(operator)
        built = (
            "built before, its time not recorded"
            if seconds is None
            else (f"built in {seconds:.0f} s" + (" (cached since)" if cached else ""))
        )
        print(f"{operator.name} {operator.version}: controller {built} ({binary})", flush=True)
        archive = binary_image(
            binary, operator.binary, operator.user, operator.image,
            binary.with_suffix(".oci.tar"), operator.aliases,
        )  # fmt: skip
        import_image(state, archive, operator.image)
        source = module_dir(operator)
        if operator is CLOUDNATIVE_PG:
            apply_all(state, cloudnative_pg_manifests(source, operator))
            wait_available(state, "cnpg-system", "cnpg-controller-manager")
        else:
            apply_all(state, mariadb_operator_manifests(source, operator))
            wait_available(state, NAMESPACE_OF_MARIADB_OPERATOR, operator.name)
        print(f"{operator.name} {operator.version}: available (image {operator.image})", flush=True)
    for name, archive in database_images():
        import_image(state, archive, name)
        print(f"database image {name} in the cluster's containerd", flush=True)
    from kubernetes.client import ApiextensionsV1Api

    crds = ApiextensionsV1Api(admin(state).client).list_custom_resource_definition().items
    print(f"{len(crds)} CRDs; next: kubectl apply -f examples/kubernetes-operators.yaml")


def main() -> int:
    return exit_status("kube operators", lambda: install_operators(state_dir()))


if __name__ == "__main__":
    sys.exit(main())
