"""The cluster's own certificate authority, its certificates and kubeconfigs."""

from __future__ import annotations

import json
from pathlib import Path

from deploy.kube.layout import DNS_USER, GATEWAY, NODE, PROXY_USER, SERVICE_CIDR, run

# P-256 keys: as good as RSA here and made in milliseconds.
NEW_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1")


def issue(pki: Path, name: str, subject: str, *, server_names: tuple[str, ...] = ()) -> None:
    """A key and a certificate signed by the cluster's own CA, valid for a month."""
    key, csr, crt = (pki / f"{name}.{kind}" for kind in ("key", "csr", "crt"))
    run("openssl", "req", "-new", "-nodes", *NEW_KEY, "-keyout", str(key), "-out", str(csr),
        "-subj", subject)  # fmt: skip
    usage = "serverAuth" if server_names else "clientAuth"
    extensions = [f"extendedKeyUsage={usage}", "keyUsage=critical,digitalSignature"]
    if server_names:
        names = [f"IP:{n}" if n[0].isdigit() else f"DNS:{n}" for n in server_names]
        extensions.append(f"subjectAltName={','.join(names)}")
    ext = pki / f"{name}.ext"
    ext.write_text("\n".join(extensions) + "\n")
    run("openssl", "x509", "-req", "-in", str(csr), "-CA", str(pki / "ca.crt"), "-CAkey",
        str(pki / "ca.key"), "-CAcreateserial", "-days", "30", "-out", str(crt), "-extfile",
        str(ext))  # fmt: skip
    csr.unlink()
    ext.unlink()
    key.chmod(0o600)


def make_pki(pki: Path) -> None:
    pki.mkdir(parents=True, mode=0o700)
    ca_key, ca_crt = str(pki / "ca.key"), str(pki / "ca.crt")
    run("openssl", "req", "-x509", "-new", "-nodes", *NEW_KEY, "-keyout", ca_key, "-out", ca_crt,
        "-days", "30", "-subj", "/CN=oltplab-kube-ca")  # fmt: skip
    issue(
        pki,
        "apiserver",
        "/CN=kube-apiserver",
        server_names=(GATEWAY, "127.0.0.1", str(next(SERVICE_CIDR.hosts())), "kubernetes",
                      "kubernetes.default", "kubernetes.default.svc"),
    )  # fmt: skip
    issue(pki, "apiserver-kubelet-client", "/O=system:masters/CN=kube-apiserver-kubelet-client")
    issue(pki, "admin", "/O=system:masters/CN=oltplab-admin")
    issue(pki, "controller-manager", "/CN=system:kube-controller-manager")
    issue(pki, "scheduler", "/CN=system:kube-scheduler")
    issue(pki, "coredns", f"/CN={DNS_USER}")
    issue(pki, "kube-proxy", f"/CN={PROXY_USER}")
    issue(pki, "kubelet", f"/O=system:nodes/CN=system:node:{NODE}")
    run("openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-out", str(pki / "sa.key"))  # fmt: skip
    run("openssl", "pkey", "-in", str(pki / "sa.key"), "-pubout", "-out", str(pki / "sa.pub"))


def kubeconfig(state: Path, user: str, port: int) -> Path:
    pki = state / "pki"
    path = state / f"{user}.kubeconfig"
    # JSON is YAML: one dump, no template.
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "oltplab",
                "cluster": {
                    "server": f"https://{GATEWAY}:{port}",
                    "certificate-authority": str(pki / "ca.crt"),
                },
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate": str(pki / f"{user}.crt"),
                    "client-key": str(pki / f"{user}.key"),
                },
            }
        ],
        "contexts": [{"name": "oltplab", "context": {"cluster": "oltplab", "user": user}}],
        "current-context": "oltplab",
    }
    path.write_text(json.dumps(document, indent=2) + "\n")
    path.chmod(0o600)
    return path
