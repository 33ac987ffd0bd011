"""The "restricted" Pod Security level as oltplab's pods meet it, the one template for the
Job's shards and the tooling's database alike: no privilege, no capability, the runtime's
seccomp profile, a user that is not root."""

from __future__ import annotations

from typing import Any

POD_USER = 10001  # the pods' image's own user (deploy/Containerfile, deploy.kube.image)


def restricted_container() -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def restricted_pod(user: int = POD_USER) -> dict[str, Any]:
    """Run as USER, who owns the pod's volumes too (fsGroup)."""
    return {
        "runAsUser": user,
        "runAsNonRoot": True,
        "fsGroup": user,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
