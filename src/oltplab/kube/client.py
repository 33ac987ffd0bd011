"""The one client oltplab speaks to a Kubernetes API server with: the official one, on the
user's kubeconfig."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from oltplab.base.errors import EnvironmentProblem


@dataclass(frozen=True)
class Api:
    """The groups of the API oltplab uses, and the exception the client raises for a
    refusal (its `status` and `reason` are the API server's)."""

    batch: Any
    core: Any
    apps: Any
    custom: Any
    error: type[Exception]


def connect() -> Api:
    """The cluster the user's kubeconfig (KUBECONFIG, as it is now) points to."""
    try:
        from kubernetes import client, config
        from kubernetes.client.rest import ApiException
    except ImportError:
        raise EnvironmentProblem(
            "the kubernetes client is missing: pip install kubernetes"
        ) from None
    try:
        config.load_kube_config(config_file=os.environ.get("KUBECONFIG"))
    except Exception as exc:  # the client raises several kinds for a missing kubeconfig
        raise EnvironmentProblem(
            f"no usable kubeconfig ({exc}); point KUBECONFIG at your cluster, or use --dry-run"
        ) from None
    return Api(
        client.BatchV1Api(), client.CoreV1Api(), client.AppsV1Api(), client.CustomObjectsApi(),
        ApiException,
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
