#!/usr/bin/env bash
# Starts a one-node Kubernetes cluster on this machine for oltplab's Kubernetes tests and
# examples: the release pinned in deploy/kube/go.mod built from source into oltplab's cache
# (once; the build time is printed), Debian's containerd, runc and CNI plugins, and a sandbox
# image built here. No registry, no service installed, nothing reachable beyond this
# machine. Prints the time to a Ready node and the KUBECONFIG to use.
#   bash scripts/kube-up.sh     # then: bash scripts/kube-down.sh
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

packages=(containerd runc containernetworking-plugins iptables umoci openssl)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  as_root apt-get update -q
  # Where systemd runs, Debian also starts containerd's own service; the cluster never uses
  # it: its containerd has its own socket, root and state under oltplab's cache.
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
export PATH="$PATH:/usr/local/go/bin"
exec python3 -m deploy.kube.cluster up "$@"
