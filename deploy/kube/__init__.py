"""The cluster tooling, not shipped with oltplab: a one-node Kubernetes cluster built from
source (cluster), the operators that deploy databases on it (operators), the images its pods
run (image, database_images) and a database of the catalog in a StatefulSet (database).
Run from the checkout's root, e.g. `python3 -m deploy.kube.cluster up`."""
