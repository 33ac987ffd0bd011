"""Shards as one Kubernetes Indexed Job, through the official client.

Pod K (JOB_COMPLETION_INDEX, from 0) runs shard K+1 of N: the spec comes from a ConfigMap,
results, shared snapshots and the engine cache live on a ReadWriteMany volume, the
engines' datadirs on the node's own disk (an emptyDir), and each pod
takes a node of its own (anti-affinity, and requests the size of a node). The pod's
command is plain `oltplab run`, so it runs the same anywhere the variables are set.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from oltplab.base.errors import EnvironmentProblem, OltplabError
from oltplab.spec import Spec
from oltplab.store.scratch import WORK_DIR_ENV

RESULTS_MOUNT = "/results"
SPEC_MOUNT = "/spec"
SCRATCH_MOUNT = "/scratch"  # the node's own disk (emptyDir): datadirs and snapshots
# A shard that runs longer than this is stopped; a finished Job is removed after a day
# (its results stay on the volume).
DEADLINE_SECONDS = 7 * 24 * 3600
KEEP_FINISHED_SECONDS = 24 * 3600
_NAME = re.compile(r"[^a-z0-9-]+")
# What the API server accepts, checked here so that a typo fails before anything is sent.
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
# A PersistentVolumeClaim's name: a DNS subdomain (RFC 1123), dot-separated labels.
_DNS_SUBDOMAIN = re.compile(rf"(?=.{{1,253}}$){_DNS_LABEL.pattern}(\.{_DNS_LABEL.pattern})*")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
_LABEL_NAME = re.compile(r"([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?" + _LABEL_VALUE.pattern)
_CPU = re.compile(r"(\d+(\.\d+)?|\d+m)")
_MEMORY = re.compile(r"\d+(\.\d+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?")
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]*")


def check_request(
    *,
    image: str,
    storage: str,
    namespace: str,
    node_selector: dict[str, str],
    cpu: str,
    memory: str,
) -> None:
    """One line naming the first option Kubernetes would refuse, and what it takes."""
    problems = [
        (_DNS_LABEL, namespace, "--namespace", "lower-case letters, digits and '-', up to 63"),
        (
            _DNS_SUBDOMAIN,
            storage,
            "--storage",
            "a PersistentVolumeClaim's name: lower-case letters, digits, '-' and '.', up to 253",
        ),
        (_IMAGE, image, "--image", "an image reference such as registry/oltplab:1.0"),
        (_CPU, cpu, "--cpu", "a positive quantity of cores such as 2, 1.5 or 500m"),
        (_MEMORY, memory, "--memory", "a positive quantity of bytes such as 8Gi or 512Mi"),
        *(
            check
            for key, value in node_selector.items()
            for check in (
                (_LABEL_NAME, key, "--node-selector", "a label key such as kubernetes.io/os"),
                (_LABEL_VALUE, value, "--node-selector", "a label value of up to 63 characters"),
            )
        ),
    ]
    for pattern, value, option, expected in problems:
        if not pattern.fullmatch(value):
            raise OltplabError(f"{option} {value!r}: expected {expected}")
    for option, value in (("--cpu", cpu), ("--memory", memory)):
        if float(re.sub(r"[^0-9.]", "", value)) <= 0:
            raise OltplabError(f"{option} {value!r}: a pod must ask for more than nothing")


def job_name(spec: Spec) -> str:
    """A DNS-1123 name for the job and its ConfigMap."""
    name = _NAME.sub("-", f"oltplab-{spec.name}".lower()).strip("-")
    return name[:52].rstrip("-")


def shard_command(shards: int) -> list[str]:
    """What the pod runs: shard JOB_COMPLETION_INDEX + 1 of N, into the shared volume."""
    width = len(str(shards))
    script = (
        'K=$((JOB_COMPLETION_INDEX + 1)); exec oltplab run "$OLTPLAB_SPEC" '
        f'--shard "$K/{shards}" '
        f'--results "$OLTPLAB_RESULTS/shard-$(printf \'%0{width}d\' "$K")" '
        '--snapshots "$OLTPLAB_RESULTS/snapshots"'
    )
    return ["sh", "-c", script]


def manifests(
    spec: Spec,
    spec_text: str,
    shards: int,
    *,
    image: str,
    storage: str,
    namespace: str,
    node_selector: dict[str, str],
    cpu: str,
    memory: str,
) -> list[dict[str, Any]]:
    check_request(
        image=image, storage=storage, namespace=namespace, node_selector=node_selector, cpu=cpu,
        memory=memory,
    )  # fmt: skip
    name = job_name(spec)
    labels = {"app.kubernetes.io/name": "oltplab", "oltplab/run": name}
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"spec.toml": spec_text},
    }
    results = f"{RESULTS_MOUNT}/{name}"
    container = {
        "name": "shard",
        "image": image,
        "command": shard_command(shards),
        "env": [
            {"name": "OLTPLAB_SPEC", "value": f"{SPEC_MOUNT}/spec.toml"},
            {"name": "OLTPLAB_RESULTS", "value": results},
            # Engines are fetched once into the shared volume.
            {"name": "OLTPLAB_CACHE", "value": f"{RESULTS_MOUNT}/.cache/oltplab"},
            {"name": WORK_DIR_ENV, "value": SCRATCH_MOUNT},
            {
                "name": "OLTPLAB_MACHINE",
                "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}},
            },
        ],
        "resources": {
            "requests": {"cpu": cpu, "memory": memory},
            "limits": {"memory": memory},
        },
        "volumeMounts": [
            {"name": "results", "mountPath": RESULTS_MOUNT},
            {"name": "spec", "mountPath": SPEC_MOUNT, "readOnly": True},
            {"name": "scratch", "mountPath": SCRATCH_MOUNT},
        ],
        # The "restricted" Pod Security level: no privilege, no capability, the runtime's
        # seccomp profile.
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    pod = {
        "metadata": {"labels": labels},
        "spec": {
            "restartPolicy": "Never",
            # The image's own user (deploy/Containerfile), who must be able to write the volume.
            "securityContext": {
                "runAsUser": 10001,
                "runAsNonRoot": True,
                "fsGroup": 10001,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            # oltplab never talks to the API server from a pod.
            "automountServiceAccountToken": False,
            "containers": [container],
            "volumes": [
                {"name": "results", "persistentVolumeClaim": {"claimName": storage}},
                {"name": "spec", "configMap": {"name": name}},
                {"name": "scratch", "emptyDir": {}},
            ],
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"oltplab/run": name}},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                }
            },
            **({"nodeSelector": node_selector} if node_selector else {}),
        },
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "completionMode": "Indexed",
            "completions": shards,
            "parallelism": shards,
            # A failed shard is tried again on its own, twice; the others go on.
            "backoffLimitPerIndex": 2,
            "maxFailedIndexes": shards,
            "activeDeadlineSeconds": DEADLINE_SECONDS,
            "ttlSecondsAfterFinished": KEEP_FINISHED_SECONDS,
            "template": pod,
        },
    }
    return [config_map, job]


def write(found: list[dict[str, Any]], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for manifest in found:
        path = folder / f"{manifest['kind'].lower()}.yaml"
        path.write_text(yaml.safe_dump(manifest, sort_keys=False))
        paths.append(path)
    return paths


def apply(found: list[dict[str, Any]]) -> str:
    """The manifests created in the cluster the user's kubeconfig points to."""
    try:
        from kubernetes import client, config
        from kubernetes.client.rest import ApiException
    except ImportError:
        raise EnvironmentProblem(
            "the kubernetes client is missing: pip install kubernetes"
        ) from None
    try:
        config.load_kube_config()
    except Exception as exc:  # the client raises several kinds for a missing kubeconfig
        raise EnvironmentProblem(
            f"no usable kubeconfig ({exc}); point KUBECONFIG at your cluster, or use --dry-run"
        ) from None
    config_map, job = found
    namespace = job["metadata"]["namespace"]
    try:
        # The client takes a manifest as a plain dict as well as its model classes.
        client.CoreV1Api().create_namespaced_config_map(namespace, config_map)  # type: ignore[arg-type]
        client.BatchV1Api().create_namespaced_job(namespace, job)  # type: ignore[arg-type]
    except ApiException as exc:
        raise OltplabError(f"Kubernetes refused the job: {exc.status} {exc.reason}") from None
    return f"job/{job['metadata']['name']} in namespace {namespace}"
