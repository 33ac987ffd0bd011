"""How each part of the cluster is started: its command line and its configuration."""

from __future__ import annotations

import json
from pathlib import Path

from deploy.kube.layout import CGROUP_ROOT, DOMAIN, GATEWAY, NODE, POD_CIDR, SERVICE_CIDR, bin_dir
from deploy.kube.pki import kubeconfig
from deploy.kube.runtime import containerd_config


def kubelet_config(state: Path, port: int) -> Path:
    pki = state / "pki"
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": GATEWAY,
        "port": port,
        "readOnlyPort": 0,
        "healthzPort": 0,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(pki / "ca.crt")},
        },
        "authorization": {"mode": "AlwaysAllow"},
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": f"/{CGROUP_ROOT}",
        "containerRuntimeEndpoint": f"unix://{state / 'containerd' / 'containerd.sock'}",
        "clusterDomain": DOMAIN,
        "clusterDNS": [GATEWAY],
        "resolvConf": str(state / "resolv.conf"),
        "failSwapOn": False,
        # Pressure when the shared disk or memory is nearly gone, not at the defaults'
        # shares (15% of a large disk is many GiB that other work here may well be using).
        "evictionHard": {
            "nodefs.available": "1Gi",
            "imagefs.available": "1Gi",
            "memory.available": "100Mi",
        },
        # The images are local and cannot be fetched again: never collect them.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "podCIDR": str(POD_CIDR),
        "maxPods": 32,
    }
    # Even a pod that asks for the node's DNS gets the cluster's, which forwards nothing.
    (state / "resolv.conf").write_text(f"nameserver {GATEWAY}\n")
    path = state / "kubelet.yaml"
    path.write_text(json.dumps(config, indent=2) + "\n")
    return path


def proxy_config(state: Path, ports: dict[str, int]) -> Path:
    """Services' addresses routed to their pods (the operators' pods reach the API server and
    their databases that way). Every connection to a Service is masqueraded: a pod then
    answers through the node, also when the Service sends a pod back to itself or to a
    neighbour on the same bridge. Its health and metrics listen on loopback, at free ports,
    and the host's conntrack limits stay as they are."""
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {
            "kubeconfig": str(kubeconfig(state, "kube-proxy", ports["apiserver"]))
        },
        "hostnameOverride": NODE,
        "mode": "iptables",
        "clusterCIDR": str(POD_CIDR),
        "iptables": {"masqueradeAll": True},
        "conntrack": {"maxPerCore": 0},
        "nodePortAddresses": [f"{GATEWAY}/32"],
        "healthzBindAddress": f"127.0.0.1:{ports['kube-proxy-health']}",
        "metricsBindAddress": f"127.0.0.1:{ports['kube-proxy-metrics']}",
    }
    path = state / "kube-proxy.yaml"
    path.write_text(json.dumps(config, indent=2) + "\n")
    return path


def corefile(state: Path, credentials: Path) -> Path:
    """The cluster's names, served on the bridge's address from what the API server knows.
    Nothing is forwarded: a name beyond the cluster gets no answer from outside it."""
    path = state / "Corefile"
    path.write_text(
        f"""{DOMAIN}:53 in-addr.arpa:53 ip6.arpa:53 {{
    bind {GATEWAY}
    errors
    kubernetes {DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {credentials} oltplab
        pods insecure
    }}
}}
"""
    )
    return path


def commands(state: Path, ports: dict[str, int]) -> dict[str, list[str]]:
    pki, binaries = state / "pki", bin_dir()
    etcd = f"http://127.0.0.1:{ports['etcd']}"
    peer = f"http://127.0.0.1:{ports['etcd-peer']}"
    return {
        "containerd": ["containerd", "--config", str(containerd_config(state))],
        "etcd": [
            str(binaries / "etcd"), "--name", "oltplab", "--data-dir", str(state / "etcd"),
            "--listen-client-urls", etcd, "--advertise-client-urls", etcd,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"oltplab={peer}", "--log-level", "warn",
        ],
        "kube-apiserver": [
            str(binaries / "kube-apiserver"),
            "--bind-address", GATEWAY, "--advertise-address", GATEWAY,
            "--secure-port", str(ports["apiserver"]),
            "--etcd-servers", etcd,
            "--service-cluster-ip-range", str(SERVICE_CIDR),
            "--client-ca-file", str(pki / "ca.crt"),
            "--tls-cert-file", str(pki / "apiserver.crt"),
            "--tls-private-key-file", str(pki / "apiserver.key"),
            "--kubelet-client-certificate", str(pki / "apiserver-kubelet-client.crt"),
            "--kubelet-client-key", str(pki / "apiserver-kubelet-client.key"),
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-account-key-file", str(pki / "sa.pub"),
            "--service-account-signing-key-file", str(pki / "sa.key"),
            "--authorization-mode", "Node,RBAC",
            "--enable-admission-plugins", "NodeRestriction",
            "--allow-privileged=false",
            # The kubelet by its address on the bridge: its name would need a DNS beyond us.
            "--kubelet-preferred-address-types", "InternalIP",
            "--profiling=false",
            # A webhook's Service is called at its pods' addresses, which the node reaches
            # over the bridge, and never through a route that kube-proxy may not have yet.
            "--enable-aggregator-routing=true",
        ],
        "kube-controller-manager": [
            str(binaries / "kube-controller-manager"),
            "--kubeconfig", str(kubeconfig(state, "controller-manager", ports["apiserver"])),
            "--secure-port", "0",
            "--leader-elect=false",
            "--use-service-account-credentials",
            "--service-account-private-key-file", str(pki / "sa.key"),
            "--root-ca-file", str(pki / "ca.crt"),
            "--cluster-signing-cert-file", str(pki / "ca.crt"),
            "--cluster-signing-key-file", str(pki / "ca.key"),
        ],
        "kube-scheduler": [
            str(binaries / "kube-scheduler"),
            "--kubeconfig", str(kubeconfig(state, "scheduler", ports["apiserver"])),
            "--secure-port", "0",
            "--leader-elect=false",
        ],
        "coredns": [
            str(binaries / "coredns"), "-conf",
            str(corefile(state, kubeconfig(state, "coredns", ports["apiserver"]))),
        ],
        "kubelet": [
            str(binaries / "kubelet"),
            "--config", str(kubelet_config(state, ports["kubelet"])),
            "--kubeconfig", str(kubeconfig(state, "kubelet", ports["apiserver"])),
            "--root-dir", str(state / "kubelet"),
            "--hostname-override", NODE,
            "--node-ip", GATEWAY,
        ],
        "kube-proxy": [
            str(binaries / "kube-proxy"), "--config", str(proxy_config(state, ports)),
        ],
    }  # fmt: skip
