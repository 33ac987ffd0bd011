"""The one client oltplab speaks to a Kubernetes API server with, the official one: for the
user's kubeconfig (commands), or for the cluster tooling's own (deploy/kube)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oltplab.base.errors import EnvironmentProblem

FIELD_MANAGER = "oltplab"


@dataclass(frozen=True)
class Api:
    """The groups of the API oltplab uses, and the exception the client raises for a
    refusal (its `status` and `reason` are the API server's)."""

    client: Any  # the ApiClient the groups share
    batch: Any
    core: Any
    apps: Any
    custom: Any
    error: type[Exception]


def connect(kubeconfig: Path | None = None) -> Api:
    """The cluster KUBECONFIG points to (as it is now), or the one of that kubeconfig."""
    try:
        from kubernetes import client, config
        from kubernetes.client.rest import ApiException
    except ImportError:
        raise EnvironmentProblem(
            "the kubernetes client is missing: pip install kubernetes"
        ) from None
    try:
        api_client = config.new_client_from_config(
            config_file=str(kubeconfig) if kubeconfig else os.environ.get("KUBECONFIG")
        )
    except Exception as exc:  # the client raises several kinds for a missing kubeconfig
        raise EnvironmentProblem(
            f"no usable kubeconfig ({exc}); point KUBECONFIG at your cluster, or use --dry-run"
        ) from None
    return Api(
        api_client, client.BatchV1Api(api_client), client.CoreV1Api(api_client),
        client.AppsV1Api(api_client), client.CustomObjectsApi(api_client), ApiException,
    )  # fmt: skip


def apply(api: Api, documents: list[dict[str, Any]]) -> None:
    """Each object created or updated to what it says, server-side (a CRD of an operator
    is larger than a client-side apply may record), in the order given."""
    from kubernetes.dynamic import DynamicClient

    dynamic = DynamicClient(api.client)
    for document in documents:
        if not document:
            continue
        resource = dynamic.resources.get(api_version=document["apiVersion"], kind=document["kind"])
        meta = document["metadata"]
        dynamic.server_side_apply(
            resource, body=document, name=meta["name"], namespace=meta.get("namespace"),
            field_manager=FIELD_MANAGER, force_conflicts=True,
        )  # fmt: skip


def unreachable(exc: Exception) -> EnvironmentProblem:
    return EnvironmentProblem(
        f"the Kubernetes API server did not answer ({str(exc).splitlines()[0][:200]}); check "
        "KUBECONFIG and that the cluster runs"
    )


def refusal(exc: Exception) -> str:
    """The API server's own sentence from a refusal, else its status and reason."""
    try:
        return str(json.loads(exc.body)["message"])  # type: ignore[attr-defined]
    except (ValueError, KeyError, TypeError, AttributeError):
        return f"{getattr(exc, 'status', '')} {getattr(exc, 'reason', '')}".strip()
