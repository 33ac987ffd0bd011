#!/usr/bin/env bash
# Issue 46's figures, end to end on this machine: the cluster's build time (first run only),
# the time to a Ready node, the pods' image, one `oltplab submit k8s` of the tiny mixes in
# two shards (each Job's time as the API server recorded it), merge and report, then
# kube-down, what it left behind (nothing), and a second kube-up and down.
#   bash bench/kubernetes_e2e.sh [RESULTS]      # default runs/kubernetes-e2e
set -euo pipefail
cd "$(dirname "$0")/.."
results=$(realpath -m "${1:-runs/kubernetes-e2e}")
spec=examples/kubernetes-tiny.toml
state="${OLTPLAB_CACHE:-$HOME/.cache/oltplab}/kube/cluster"
export PATH="$PATH:/usr/local/go/bin"
if [ -e "$results" ]; then
  echo "$results exists: give a new folder" >&2
  exit 2
fi
mkdir -p "$results/volume"
chown 10001:10001 "$results/volume"   # the pods' user writes its shards there

seconds() { python3 -c "import time; print(round(time.monotonic() - $1))"; }
now() { python3 -c "import time; print(time.monotonic())"; }

echo "== kube-up"
bash scripts/kube-up.sh | tee "$results/kube-up.txt"
export KUBECONFIG="$state/admin.kubeconfig"
kubectl get nodes -o wide
trap 'bash scripts/kube-down.sh' EXIT

echo "== image"
oltplab engines fetch $(python3 -c "import tomllib,sys; print(' '.join(e['name'] for e in tomllib.load(open('$spec','rb'))['engines']))")
start=$(now)
image=$(python3 -m deploy.kube.image "$spec" | tee -a /dev/stderr | awk '/^image /{print $2}')
echo "image $image built and imported in $(seconds "$start") s"

echo "== submit"
kubectl apply -f - <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: bench
  labels:
    pod-security.kubernetes.io/enforce: restricted
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: e2e-results
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteMany]
  storageClassName: ""
  persistentVolumeReclaimPolicy: Retain
  hostPath: {path: "$results/volume", type: Directory}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: results, namespace: bench}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: ""
  volumeName: e2e-results
  resources: {requests: {storage: 1Gi}}
EOF
start=$(now)
oltplab submit k8s "$spec" --shards 2 --results "$results/volume" --image "$image" \
  --storage results --namespace bench --engine-cache image --cpu 1 --memory 1Gi
until kubectl -n bench wait --for=condition=Complete job --all --timeout=10s >/dev/null 2>&1; do
  oltplab status "$results/volume" | tail -n 6
  if kubectl -n bench get jobs -o jsonpath='{.items[*].status.conditions[*].type}' | grep -q Failed; then
    echo "a Job failed" >&2
    exit 1
  fi
done
echo "all Jobs complete in $(seconds "$start") s after submit"
kubectl -n bench get jobs -o jsonpath='{range .items[*]}{.metadata.name}: {.status.startTime} -> {.status.completionTime}{"\n"}{end}'
oltplab merge "$results/volume" -o "$results/merged"
oltplab report "$results/merged" -o "$results/report"

echo "== kube-down, then up and down again"
trap - EXIT
bash scripts/kube-down.sh
left=$( (pgrep -af "$state" || true; grep " $state" /proc/self/mountinfo || true;
         ls -d /sys/fs/cgroup/*/oltplab 2>/dev/null || true; ip -br link | grep -w oltplab0 || true) )
echo "left behind: ${left:-nothing}"
bash scripts/kube-up.sh | tail -n 3
bash scripts/kube-down.sh
echo "figures: $results/kube-up.txt, report $results/report/report.md"
