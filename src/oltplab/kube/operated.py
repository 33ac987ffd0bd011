"""A database an operator deploys, named by its resource and read from the live objects:
the Service that reaches it, the Secret that holds the benchmark account's password, the
pod its server runs in, the operator's version and, while it is not ready, the operator's
own reason why.

Reading is split from the API: `operated` is a pure function of the objects as the API
gives them (JSON), `read_operated` fetches those objects."""

from __future__ import annotations

import base64
import json
import time
from dataclasses import asdict, dataclass
from typing import Any

from oltplab.base.errors import EngineError
from oltplab.kube.client import Api, refusal
from oltplab.kube.waiting import stuck


@dataclass(frozen=True)
class OperatorKind:
    """What oltplab knows of one operator's database resource."""

    kind: str
    group: str
    version: str
    plural: str
    family: str
    operator: str  # its project's name, as its Deployment is labelled
    pods_label: str  # the label its server pods carry, with the resource's name


CLUSTER = OperatorKind(
    "Cluster", "postgresql.cnpg.io", "v1", "clusters", "postgresql", "cloudnative-pg",
    "cnpg.io/cluster",
)  # fmt: skip
MARIADB = OperatorKind(
    "MariaDB", "k8s.mariadb.com", "v1alpha1", "mariadbs", "mariadb", "mariadb-operator",
    "app.kubernetes.io/instance",
)  # fmt: skip
KINDS = {kind.kind: kind for kind in (CLUSTER, MARIADB)}


@dataclass(frozen=True)
class Operated:
    """An operator's database as oltplab measures it: an endpoint and an account."""

    endpoint: str  # host:port, the Service's name in the cluster's DNS
    user: str
    secret: str  # the Secret holding the account's password, in the resource's namespace
    secret_key: str
    family: str
    platform: str  # the operator, the resource's spec and the server's pod, in a line
    problem: str  # why it is not ready, in the operator's words; '' when it is
    blocked: str = ""  # a pod of it that will not start by waiting longer, and why

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Operated:
        return cls(**json.loads(text))


def resource_name(kind: OperatorKind, namespace: str, name: str) -> str:
    return f"{kind.kind} {namespace}/{name}"


def operated(
    kind: OperatorKind,
    resource: dict[str, Any],
    pods: list[dict[str, Any]],
    operator_version: str,
    domain: str = "cluster.local",
) -> Operated:
    """The database that RESOURCE (its kind's JSON) describes, with its server's PODS."""
    meta, spec = resource["metadata"], resource.get("spec") or {}
    namespace, name = meta["namespace"], meta["name"]
    if kind is CLUSTER:
        initdb = (spec.get("bootstrap") or {}).get("initdb") or {}
        service, port = f"{name}-rw", 5432
        user = initdb.get("owner") or "app"
        secret = (initdb.get("secret") or {}).get("name") or f"{name}-app"
        key = "password"
        described = (
            f"instances {spec.get('instances', 1)}, image {spec.get('imageName', '-')}, "
            f"storage {(spec.get('storage') or {}).get('size', '-')} of class "
            f"{(spec.get('storage') or {}).get('storageClass') or 'default'}"
        )
    else:
        password = spec.get("passwordSecretKeyRef") or {}
        service, port = name, int(spec.get("port", 3306))
        user, secret, key = (
            spec.get("username") or "",
            password.get("name", ""),
            password.get("key", "password"),
        )
        storage = spec.get("storage") or {}
        described = (
            f"replicas {spec.get('replicas', 1)}, image {spec.get('image', '-')}, storage "
            f"{storage.get('size', '-')} of class {storage.get('storageClassName') or 'default'}"
        )
    limits = (spec.get("resources") or {}).get("limits") or {}
    shown_limits = ", ".join(f"{k} {v}" for k, v in sorted(limits.items())) or "none"
    servers = ", ".join(
        f"pod {p['metadata']['name']} on node {(p.get('spec') or {}).get('nodeName') or '-'}"
        for p in pods
    ) or "no pod yet"  # fmt: skip
    platform = (
        f"{kind.operator} {operator_version}, {resource_name(kind, namespace, name)} "
        f"({described}, limits {shown_limits}): {servers}"
    )
    blocked = "; ".join(reason for pod in pods if (reason := stuck(pod)))
    said = not_ready(kind, resource)
    return Operated(
        f"{service}.{namespace}.svc.{domain}:{port}", user, secret, key, kind.family, platform,
        "; ".join(filter(None, [said, blocked])) if said else "", blocked if said else "",
    )  # fmt: skip


def not_ready(kind: OperatorKind, resource: dict[str, Any]) -> str:
    """Why the database is not ready, in its operator's words; '' when it is."""
    status, spec = resource.get("status") or {}, resource.get("spec") or {}
    if kind is CLUSTER:
        ready = status.get("readyInstances", 0) >= spec.get("instances", 1)
        if ready and status.get("phase") == "Cluster in healthy state":
            return ""
        said = f"phase {status.get('phase') or 'not set yet'!r}"
        if status.get("phaseReason"):
            said += f" ({status['phaseReason']})"
    else:
        conditions = {c.get("type"): c for c in status.get("conditions") or []}
        condition = conditions.get("Ready") or {}
        if condition.get("status") == "True":
            return ""
        said = f"condition Ready {condition.get('status', 'not set yet')}" + (
            f" ({condition['reason']}: {condition.get('message', '')})" if condition else ""
        )
    return said


def settled(api: Api, kind_name: str, namespace: str, name: str, seconds: float) -> Operated:
    """The database once it is ready, or once a pod of it says why it never will be (an
    image the node lacks, a crash loop, no room on any node), or as it stands after
    SECONDS: one still starting is not taken for one that failed."""
    deadline = time.monotonic() + seconds
    while True:
        found = read_operated(api, kind_name, namespace, name)
        if not found.problem or found.blocked or time.monotonic() > deadline:
            return found
        time.sleep(2)


def read_operated(api: Api, kind_name: str, namespace: str, name: str) -> Operated:
    """The resource, its server pods and its operator's version, read live."""
    kind = KINDS[kind_name]
    where = resource_name(kind, namespace, name)
    client = api.core.api_client
    try:
        resource = api.custom.get_namespaced_custom_object(
            kind.group, kind.version, namespace, kind.plural, name
        )
    except api.error as exc:
        raise EngineError(f"Kubernetes {where}: not read ({refusal(exc)})") from None
    try:
        listed = api.core.list_namespaced_pod(namespace, label_selector=f"{kind.pods_label}={name}")
        pods = [client.sanitize_for_serialization(pod) for pod in listed.items]
    except api.error as exc:
        raise EngineError(f"Kubernetes {where}: its pods not read ({refusal(exc)})") from None
    return operated(kind, resource, pods, operator_version(api, kind))


def operator_version(api: Api, kind: OperatorKind) -> str:
    """The tag of the operator's image, as its Deployment runs it, wherever it is."""
    try:
        deployments = api.apps.list_deployment_for_all_namespaces(
            label_selector=f"app.kubernetes.io/name={kind.operator}"
        ).items
    except api.error as exc:
        return f"(version not read: {refusal(exc)})"
    images = [c.image for d in deployments for c in d.spec.template.spec.containers]
    if not images:
        return "(no Deployment of it found)"
    return images[0].rsplit(":", 1)[-1] if ":" in images[0].rsplit("/", 1)[-1] else images[0]


def secret_value(api: Api, namespace: str, name: str, key: str) -> str:
    """One key of a Secret, decoded; '' when the key is absent."""
    try:
        secret = api.core.read_namespaced_secret(name, namespace)
    except api.error as exc:
        raise EngineError(
            f"Kubernetes Secret {namespace}/{name}: not read ({refusal(exc)})"
        ) from None
    encoded = (secret.data or {}).get(key)
    return base64.b64decode(encoded).decode() if encoded else ""
