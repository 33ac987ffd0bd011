"""The API server as its administrator sees it, over the cluster's own TLS."""

from __future__ import annotations

import json
import ssl
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from layout import DNS_USER, GATEWAY, NODE, ClusterError
from processes import alive


def admin_context(state: Path) -> ssl.SSLContext:
    pki = state / "pki"
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    return context


def api_get(state: Path, path: str) -> Any:
    port = json.loads((state / "ports.json").read_text())["apiserver"]
    with urllib.request.urlopen(
        f"https://{GATEWAY}:{port}{path}", context=admin_context(state), timeout=5
    ) as response:
        body = response.read()
    return json.loads(body) if body.startswith(b"{") else {"text": body.decode()}


def api_request(state: Path, method: str, path: str, body: object = None) -> None:
    port = json.loads((state / "ports.json").read_text())["apiserver"]
    request = urllib.request.Request(
        f"https://{GATEWAY}:{port}{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, context=admin_context(state), timeout=10):
        pass


def allow_dns_reads(state: Path) -> None:
    """What the DNS server may read: Services, their endpoints, pods and namespaces."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    name = DNS_USER.replace(":", "-")
    api_request(state, "POST", f"{rbac}/clusterroles", {
        "metadata": {"name": name},
        "rules": [
            {"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"],
             "verbs": ["list", "watch"]},
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
             "verbs": ["list", "watch"]},
        ],
    })  # fmt: skip
    api_request(state, "POST", f"{rbac}/clusterrolebindings", {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": DNS_USER}],
    })  # fmt: skip


def node_ready(state: Path) -> bool:
    node = api_get(state, f"/api/v1/nodes/{NODE}")
    conditions = node["status"]["conditions"]
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def wait_for(
    what: str, ready: Callable[[], bool], state: Path, component: str, seconds: float
) -> None:
    """Waits until ready() is true; a component that died or a timeout ends it with its log."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except (OSError, ValueError, KeyError):
            pass
        if not alive(state, component):
            break
        time.sleep(0.5)
    tail = (state / "logs" / f"{component}.log").read_text(errors="replace").splitlines()[-15:]
    raise ClusterError(
        f"{what} not ready after {seconds:.0f} s; {component}'s log "
        f"({state / 'logs' / f'{component}.log'}) ends:\n" + "\n".join(tail)
    )
