#!/usr/bin/env bash
# Stops the cluster scripts/kube-up.sh started, by the pids it recorded, and removes what it
# made on this machine: pods' mounts, network namespaces, cgroups, the bridge, firewall
# chains. Its state and logs stay in oltplab's cache until the next kube-up.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 -m deploy.kube.cluster down
