"""Why a pod's containers have not started: a pod that never will otherwise looks merely
Pending, or a database merely not ready, until a timeout."""

from __future__ import annotations

from typing import Any

# Waiting reasons a container does not leave by waiting longer.
STUCK = frozenset({
    "ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff", "InvalidImageName",
    "CreateContainerConfigError", "CreateContainerError", "CrashLoopBackOff",
})  # fmt: skip


def waiting(pod: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Each waiting container of a pod (as the API gives it, in JSON form): its name, the
    reason and the message; init containers first."""
    status = pod.get("status") or {}
    found = []
    for key in ("initContainerStatuses", "containerStatuses"):
        for container in status.get(key) or []:
            state = (container.get("state") or {}).get("waiting") or {}
            if state.get("reason"):
                found.append((container["name"], state["reason"], state.get("message") or ""))
    return found


def stuck(pod: dict[str, Any]) -> str:
    """Why the pod will not start by waiting longer, in a line; '' while it may yet."""
    for container, reason, message in waiting(pod):
        if reason in STUCK:
            name = (pod.get("metadata") or {}).get("name", "?")
            said = f": {message}" if message else ""
            return f"pod {name} container {container} {reason}{said}"
    unschedulable = [
        c for c in (pod.get("status") or {}).get("conditions") or []
        if c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
    ]  # fmt: skip
    if unschedulable:
        name = (pod.get("metadata") or {}).get("name", "?")
        return f"pod {name} unschedulable: {unschedulable[0].get('message', '')}"
    return ""
