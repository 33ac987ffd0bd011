"""The API server as the cluster's administrator sees it, through oltplab's one client
(oltplab.kube.client) on the admin kubeconfig."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from deploy.kube.layout import DNS_USER, NODE, ClusterError
from deploy.kube.processes import alive
from oltplab.kube.client import Api, apply, connect


def admin(state: Path) -> Api:
    return connect(state / "admin.kubeconfig")


def api_ready(state: Path) -> bool:
    """The API server's own word on its readiness (/readyz)."""
    client = admin(state).client
    method, url, headers, _, _ = client.param_serialize("GET", "/readyz", auth_settings=[])
    response = client.call_api(method, url, headers, _request_timeout=5)
    response.read()
    return bool(response.status == 200 and response.data == b"ok")


def allow_dns_reads(state: Path) -> None:
    """What the DNS server may read: Services, their endpoints, pods and namespaces."""
    name = DNS_USER.replace(":", "-")
    rbac = "rbac.authorization.k8s.io/v1"
    apply(admin(state), [
        {"apiVersion": rbac, "kind": "ClusterRole", "metadata": {"name": name},
         "rules": [
             {"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"],
              "verbs": ["list", "watch"]},
             {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
              "verbs": ["list", "watch"]},
         ]},
        {"apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": {"name": name},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": name},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                       "name": DNS_USER}]},
    ])  # fmt: skip


def node_ready(state: Path) -> bool:
    conditions = admin(state).core.read_node(NODE).status.conditions or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def delete_all_pods(state: Path) -> None:
    """Every pod of every namespace asked to go at once."""
    api = admin(state)
    for namespace in api.core.list_namespace().items:
        api.core.delete_collection_namespaced_pod(namespace.metadata.name, grace_period_seconds=0)


def wait_for(
    what: str, ready: Callable[[], bool], state: Path, component: str, seconds: float
) -> None:
    """Waits until ready() is true; a component that died or a timeout ends it with its log."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except Exception:  # not answering yet, in any of the client's ways
            pass
        if not alive(state, component):
            break
        time.sleep(0.5)
    tail = (state / "logs" / f"{component}.log").read_text(errors="replace").splitlines()[-15:]
    raise ClusterError(
        f"{what} not ready after {seconds:.0f} s; {component}'s log "
        f"({state / 'logs' / f'{component}.log'}) ends:\n" + "\n".join(tail)
    )
