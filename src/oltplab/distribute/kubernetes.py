"""Shards as Kubernetes Indexed Jobs, through the official client and the user's kubeconfig.

The run's directory is a ReadWriteMany volume (a PersistentVolumeClaim) that the pods mount
and the submitting machine sees too, as a Slurm run's directory is a shared filesystem:
`prepare` writes the spec there, each pod writes its `shard-K` beside it, and `status`,
`merge` and `report` read them where they are. Each submission is one Indexed Job for the
shards it names (pod I runs the I-th of them), so a shard that failed is submitted again in
a Job of its own. The engines' datadirs live on the node's own disk (an emptyDir), and each
pod takes a node of its own (anti-affinity, and requests the size of a node). The pods pass
the "restricted" Pod Security level.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

import yaml

from oltplab.base.errors import OltplabError
from oltplab.distribute.layout import SNAPSHOTS, SPEC_FILE, Distributed
from oltplab.distribute.schedulers import TaskState, submit_option
from oltplab.engines.endpoint import (
    OPERATED_ENV,
    PLATFORM_ENV,
    endpoint_host,
    operated_password_env,
)
from oltplab.kube.client import Api, connect, refusal, unreachable
from oltplab.kube.operated import settled
from oltplab.kube.pods import POD_USER, restricted_container, restricted_pod
from oltplab.kube.waiting import waiting
from oltplab.spec import Spec, load_spec
from oltplab.spec.sources import KubernetesSource
from oltplab.store.files import write_atomic
from oltplab.store.scratch import WORK_DIR_ENV

VOLUME_MOUNT = "/results"
SCRATCH_MOUNT = "/scratch"  # the node's own disk (emptyDir): datadirs and snapshots' copies
# A shard that runs longer than this is stopped; a finished Job is removed after a day
# (its results stay on the volume).
DEADLINE_SECONDS = 7 * 24 * 3600
KEEP_FINISHED_SECONDS = 24 * 3600
ENGINE_CACHES = ("volume", "image")
_NAME = re.compile(r"[^a-z0-9-]+")
# What the API server accepts, checked here so that a typo fails before anything is sent.
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
# A PersistentVolumeClaim's name: a DNS subdomain (RFC 1123), dot-separated labels.
_DNS_SUBDOMAIN = re.compile(rf"(?=.{{1,253}}$){_DNS_LABEL.pattern}(\.{_DNS_LABEL.pattern})*")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
_LABEL_NAME = re.compile(r"([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?" + _LABEL_VALUE.pattern)
_CPU = re.compile(r"(\d+(\.\d+)?|\d+m)")
_MEMORY = re.compile(r"\d+(\.\d+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?")
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]*")
_SUBPATH = re.compile(r"([A-Za-z0-9._-]+/)*[A-Za-z0-9._-]*")
# A pod in these phases has not ended; a Job's index with no pod yet is waiting too.
_ACTIVE_PHASES = {"Pending", "Running", "Unknown"}
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
# How long submit waits for an operator's database that is still starting; one whose pod
# will never start is said at once.
OPERATED_WAIT_SECONDS = 120
# What the pod's command sets itself; a --run-arg may not set them again.
_OWN_RUN_OPTIONS = ("--shard", "--results", "-r", "--snapshots")


def parse_node_selector(pairs: tuple[str, ...]) -> dict[str, str]:
    selector = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise OltplabError(f"--node-selector {pair}: expected key=value")
        selector[key] = value
    return selector


@dataclass(frozen=True)
class Request:
    """What the pods are made of and ask for, checked as the API server would."""

    image: str
    claim: str
    subpath: str = ""
    namespace: str = "default"
    node_selector: tuple[str, ...] = ()
    cpu: str = "2"
    memory: str = "8Gi"
    engine_cache: str = "volume"
    secret: str | None = None
    run_args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        problems = [
            (_DNS_LABEL, self.namespace, "--namespace",
             "lower-case letters, digits and '-', up to 63"),
            (_DNS_SUBDOMAIN, self.claim, "--storage",
             "a PersistentVolumeClaim's name: lower-case letters, digits, '-' and '.', up to 253"),
            (_IMAGE, self.image, "--image", "an image reference such as registry/oltplab:1.0"),
            (_SUBPATH, self.subpath, "--subpath",
             "a relative path inside the volume, such as runs/a"),
            (_CPU, self.cpu, "--cpu", "a positive quantity of cores such as 2, 1.5 or 500m"),
            (_MEMORY, self.memory, "--memory", "a positive quantity of bytes such as 8Gi or 512Mi"),
            *(
                check
                for key, value in parse_node_selector(self.node_selector).items()
                for check in (
                    (_LABEL_NAME, key, "--node-selector", "a label key such as kubernetes.io/os"),
                    (_LABEL_VALUE, value, "--node-selector", "a label value of 63 characters"),
                )
            ),
        ]  # fmt: skip
        for pattern, value, option, expected in problems:
            if not pattern.fullmatch(value):
                raise OltplabError(f"{option} {value!r}: expected {expected}")
        if self.secret is not None and not _DNS_SUBDOMAIN.fullmatch(self.secret):
            raise OltplabError(f"--env-from-secret {self.secret!r}: expected a Secret's name")
        for arg in self.run_args:
            if arg.split("=", 1)[0] in _OWN_RUN_OPTIONS:
                raise OltplabError(
                    f"--run-arg {arg}: the pod's command sets it itself (its shard, its "
                    "results and snapshots in the run's directory)"
                )
        if ".." in self.subpath.split("/"):
            raise OltplabError(f"--subpath {self.subpath!r}: expected a path inside the volume")
        for option, value in (("--cpu", self.cpu), ("--memory", self.memory)):
            if float(re.sub(r"[^0-9.]", "", value)) <= 0:
                raise OltplabError(f"{option} {value!r}: a pod must ask for more than nothing")
        if self.engine_cache not in ENGINE_CACHES:
            raise OltplabError(
                f"--engine-cache {self.engine_cache!r}: expected one of {', '.join(ENGINE_CACHES)}"
            )


def run_label(root: Path) -> str:
    """A DNS-1123 label for the run: its folder's name and a digest of its whole path, so
    that two runs in folders of the same name never share Jobs."""
    digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:6]
    name = _NAME.sub("-", f"oltplab-{root.name}".lower()).strip("-")[:40].rstrip("-")
    return f"{name}-{digest}"


def shard_command(shards: int, run_args: tuple[str, ...] = ()) -> list[str]:
    """What pod I runs: the I-th shard of OLTPLAB_SHARDS (of N), into the run's directory."""
    width = len(str(shards))
    script = (
        'set -- $OLTPLAB_SHARDS; shift "$JOB_COMPLETION_INDEX"; K="$1"; '
        f'exec oltplab run "$OLTPLAB_RUN/{SPEC_FILE}" --shard "$K/{shards}" '
        f'--results "$OLTPLAB_RUN/shard-$(printf \'%0{width}d\' "$K")" '
        f'--snapshots "$OLTPLAB_RUN/{SNAPSHOTS}"'
    )
    return ["sh", "-c", " ".join([script, *map(shlex.quote, run_args)])]


def job_manifest(
    request: Request, name: str, run: str, total: int, shards: list[int]
) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": "oltplab", "oltplab/run": run, "oltplab/job": name}
    run_dir = f"{VOLUME_MOUNT}/{request.subpath}".rstrip("/")
    env: list[dict[str, Any]] = [
        {"name": "OLTPLAB_SHARDS", "value": " ".join(map(str, shards))},
        {"name": "OLTPLAB_RUN", "value": run_dir},
        {"name": WORK_DIR_ENV, "value": SCRATCH_MOUNT},
        {"name": "OLTPLAB_MACHINE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
    ]
    if request.engine_cache == "volume":
        # Engines are fetched once into the shared volume; "image" keeps the image's own.
        env.append({"name": "OLTPLAB_CACHE", "value": f"{VOLUME_MOUNT}/.cache/oltplab"})
    container = {
        "name": "shard",
        "image": request.image,
        # A tag such as :latest would otherwise make the node fetch the image each time.
        "imagePullPolicy": "IfNotPresent",
        "command": shard_command(total, request.run_args),
        # An endpoint's password (its spec's password_env) from a Secret, never in the spec.
        **({"envFrom": [{"secretRef": {"name": request.secret}}]} if request.secret else {}),
        "env": env,
        "resources": {
            "requests": {"cpu": request.cpu, "memory": request.memory},
            "limits": {"memory": request.memory},
        },
        "volumeMounts": [
            {"name": "results", "mountPath": VOLUME_MOUNT},
            {"name": "scratch", "mountPath": SCRATCH_MOUNT},
        ],
        "securityContext": restricted_container(),
    }
    selector = parse_node_selector(request.node_selector)
    pod = {
        "metadata": {"labels": labels},
        "spec": {
            "restartPolicy": "Never",
            # The image's own user, who must be able to write the volume.
            "securityContext": restricted_pod(),
            # oltplab never talks to the API server from a pod.
            "automountServiceAccountToken": False,
            "containers": [container],
            "volumes": [
                {"name": "results", "persistentVolumeClaim": {"claimName": request.claim}},
                {"name": "scratch", "emptyDir": {}},
            ],
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"oltplab/run": run}},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                }
            },
            **({"nodeSelector": selector} if selector else {}),
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": request.namespace, "labels": labels},
        "spec": {
            "completionMode": "Indexed",
            "completions": len(shards),
            "parallelism": len(shards),
            # A failed shard is tried again on its own, twice; the others go on.
            "backoffLimitPerIndex": 2,
            "maxFailedIndexes": len(shards),
            "activeDeadlineSeconds": DEADLINE_SECONDS,
            "ttlSecondsAfterFinished": KEEP_FINISHED_SECONDS,
            "template": pod,
        },
    }


@dataclass(frozen=True)
class Kubernetes:
    """Submit the shards as a Kubernetes Indexed Job (one pod per node) into the namespace,
    with the user's kubeconfig; RESULTS is the volume the pods mount (or a folder of it).

    Each field made with `submit_option` is an option of `oltplab submit k8s`."""

    image: str | None = submit_option("The image with oltplab (deploy/Containerfile).")
    claim: str | None = submit_option(
        "The ReadWriteMany PersistentVolumeClaim whose volume RESULTS is.", flag="--storage"
    )
    subpath: str = submit_option(
        "RESULTS' path inside that volume (default: the volume's root).", default=""
    )
    namespace: str = submit_option("Kubernetes namespace.", default="default")
    node_selector: tuple[str, ...] = submit_option(
        "key=value a node must carry (repeat).", default=()
    )
    cpu: str = submit_option("CPU a pod asks for: a whole node's.", default="2")
    memory: str = submit_option("Memory a pod asks for: a whole node's.", default="8Gi")
    engine_cache: str = submit_option(
        "Where pods keep engines: volume (fetched once into the volume) or image (the image's "
        "own, for a cluster that reaches no engine source).",
        default="volume",
    )
    secret: str | None = submit_option(
        "A Secret whose keys the pods get as environment variables (an endpoint's password_env).",
        flag="--env-from-secret",
    )
    run_args: tuple[str, ...] = submit_option(
        "One more option of the pods' oltplab run, such as --prepare (repeat).",
        default=(),
        flag="--run-arg",
    )
    dry_run: bool = submit_option(
        "Write the Job's manifest into RESULTS/k8s and create nothing.", default=False
    )
    name: ClassVar[str] = "k8s"

    def request(self) -> Request:
        if self.image is None or self.claim is None:
            raise OltplabError("submit k8s needs --image IMAGE and --storage CLAIM")
        return Request(
            self.image, self.claim, self.subpath, self.namespace, self.node_selector, self.cpu,
            self.memory, self.engine_cache, self.secret, self.run_args,
        )  # fmt: skip

    def __post_init__(self) -> None:
        if self.image is not None or self.claim is not None:
            self.request()  # checked before `submit` writes anything

    def check_results(self, root: Path) -> None:
        """Before submit makes the run's directory: a dry run creates no pod; else the
        pods' user must be able to write it, and a directory this command would make is
        root's, which it cannot."""
        if self.dry_run:
            return
        if not root.exists():
            raise OltplabError(
                f"--results {root}: does not exist, and made here it would be yours, which the "
                f"pods' user (uid {POD_USER}) cannot write; mkdir {root} && chown {POD_USER} "
                f"{root} (or chmod o+w), then submit again"
            )
        check_writable_by_pods(root)

    def submit(self, distributed: Distributed, shards: list[int]) -> str:
        """One Indexed Job for these shards; its name. A dry run writes the manifest, records
        no job and says where the manifest is."""
        request = self.request()
        run = run_label(distributed.root)
        name = f"{run}-{len(distributed.jobs) + 1}"
        job = job_manifest(request, name, run, distributed.shards, shards)
        folder = distributed.root / "k8s"
        folder.mkdir(exist_ok=True)
        path = folder / f"{name}.yaml"
        write_atomic(path, yaml.safe_dump(job, sort_keys=False))
        if self.dry_run:
            return f"manifest {path} written, nothing created (kubectl apply -f {path} creates it)"
        api = connect()
        spec = load_spec(distributed.root / SPEC_FILE)
        env = job["spec"]["template"]["spec"]["containers"][0]["env"]
        if platforms := endpoint_platforms(api, spec):
            env.append({"name": PLATFORM_ENV, "value": json.dumps(platforms)})
        env += operated_env(api, spec, request.namespace)
        write_atomic(path, yaml.safe_dump(job, sort_keys=False))
        try:
            api.batch.create_namespaced_job(request.namespace, job)
        except api.error as exc:
            raise OltplabError(f"Kubernetes refused the job: {refusal(exc)}") from None
        except OSError as exc:
            raise unreachable(exc) from None
        distributed.jobs.append({"job": name, "shards": shards, "namespace": request.namespace})
        distributed.save()
        return name

    def states(self, distributed: Distributed) -> dict[int, TaskState]:
        """Each shard's latest pod as the API server knows it; a shard whose Job still runs
        and has no pod yet is pending. Jobs the cluster removed are absent."""
        if not distributed.jobs:
            return {}
        api = connect()
        found: dict[int, TaskState] = {}
        for recorded in distributed.jobs:
            namespace = recorded.get("namespace", self.namespace)
            shards = [int(s) for s in recorded["shards"]]
            try:
                job = api.batch.read_namespaced_job(recorded["job"], namespace)
                pods = api.core.list_namespaced_pod(
                    namespace, label_selector=f"oltplab/job={recorded['job']}"
                ).items
            except api.error as exc:
                if exc.status == 404:  # type: ignore[attr-defined]
                    continue
                raise unreachable(exc) from None
            except OSError as exc:
                raise unreachable(exc) from None
            # An index the running Job has not ended is active, between two tries too.
            ended = _indexes(job.status.completed_indexes) | _indexes(job.status.failed_indexes)
            running = set() if _finished(job) else set(range(len(shards))) - ended
            for index in running:
                found[shards[index]] = TaskState("Pending", "-", True)
            for pod in sorted(pods, key=lambda p: p.metadata.creation_timestamp):
                index = int((pod.metadata.annotations or {}).get(INDEX_ANNOTATION, -1))
                if 0 <= index < len(shards):
                    phase = pod.status.phase or "Unknown"
                    active = phase in _ACTIVE_PHASES or index in running
                    as_json = api.core.api_client.sanitize_for_serialization(pod)
                    said = " ".join([phase, *(f"({why})" for _, why, _ in waiting(as_json))])
                    found[shards[index]] = TaskState(said, pod.spec.node_name or "-", active)
        return found

    def cancel(self, distributed: Distributed) -> list[int]:
        """Each Job with an active shard deleted, its pods with it."""
        active = {k for k, s in self.states(distributed).items() if s.active}
        if not active:
            return []
        api = connect()
        for recorded in distributed.jobs:
            if active & {int(s) for s in recorded["shards"]}:
                try:
                    api.batch.delete_namespaced_job(
                        recorded["job"],
                        recorded.get("namespace", self.namespace),
                        propagation_policy="Foreground",
                    )
                except api.error as exc:
                    if exc.status != 404:  # type: ignore[attr-defined]
                        raise unreachable(exc) from None
        return sorted(active)


def operated_env(api: Api, spec: Spec, namespace: str) -> list[dict[str, Any]]:
    """What the pods need of each operator's database in the spec and cannot read
    themselves: the database as read now (ready or not, and why), and its password from
    the resource's own Secret, which a pod can only read in its own namespace."""
    found, env = {}, []
    for engine in spec.engines:
        source = engine.source
        if not isinstance(source, KubernetesSource):
            continue
        resource = source.kubernetes
        if resource.namespace != namespace:
            raise OltplabError(
                f"engine {engine.name}: its {resource.kind} is in namespace "
                f"{resource.namespace}, the pods in {namespace}, where they cannot read its "
                f"Secret; submit with --namespace {resource.namespace}"
            )
        operated = settled(
            api, resource.kind, resource.namespace, resource.name, OPERATED_WAIT_SECONDS
        )
        found[engine.name] = asdict(operated)
        # Optional: a Secret the operator has not made yet fails that engine, not the pod.
        reference = {"name": operated.secret, "key": operated.secret_key, "optional": True}
        env.append(
            {"name": operated_password_env(engine.name), "valueFrom": {"secretKeyRef": reference}}
        )
    return [{"name": OPERATED_ENV, "value": json.dumps(found)}, *env] if found else []


def endpoint_platforms(api: Api, spec: Spec) -> dict[str, str]:
    """For each endpoint of the spec that is a Service of this cluster (NAME.NAMESPACE.svc,
    or POD.NAME.NAMESPACE.svc for one of its pods), the pods behind it with their node and
    CPU and memory limits: what the report says the server ran on, or why that is not
    known (a Service the submitting user may not read)."""
    found = {}
    for engine in spec.engines:
        labels = (endpoint_host(engine) or "").split(".")
        if "svc" not in labels or labels.index("svc") < 2:
            continue
        service, namespace = labels[labels.index("svc") - 2 : labels.index("svc")]
        try:
            selector = api.core.read_namespaced_service(service, namespace).spec.selector or {}
            pods = api.core.list_namespaced_pod(
                namespace, label_selector=",".join(f"{k}={v}" for k, v in selector.items())
            ).items
        except api.error as exc:
            found[engine.name] = (
                f"Kubernetes Service {service}.{namespace}: its pods not read "
                f"({exc.status} {exc.reason})"  # type: ignore[attr-defined]
            )
            continue
        said = [
            f"Kubernetes pod {pod.metadata.name} (node {pod.spec.node_name or '-'}): "
            + ", ".join(_limits(c) for c in pod.spec.containers)
            for pod in pods
        ]
        if said:
            found[engine.name] = "; ".join(said)
    return found


def _limits(container: Any) -> str:
    limits = (container.resources.limits if container.resources else None) or {}
    shown = ", ".join(f"{k} {v}" for k, v in sorted(limits.items())) or "none"
    return f"container {container.name} limits {shown}"


def check_writable_by_pods(root: Path) -> None:
    """The pods run as POD_USER and make their shard folders in the run's directory."""
    info = root.stat()
    if (
        info.st_uid == POD_USER
        or info.st_mode & 0o002
        or (info.st_gid == POD_USER and info.st_mode & 0o020)
    ):
        return
    raise OltplabError(
        f"--results {root}: the pods' user (uid {POD_USER}) cannot write it; chown "
        f"{POD_USER} {root} (or chmod o+w), then submit again"
    )


def _finished(job: Any) -> bool:
    return any(
        c.type in ("Complete", "Failed") and c.status == "True"
        for c in (job.status.conditions or [])
    )


def _indexes(said: str | None) -> set[int]:
    """The Job's "1,3-5" form of a set of indexes."""
    found: set[int] = set()
    for part in (said or "").split(","):
        if "-" in part:
            low, high = part.split("-")
            found.update(range(int(low), int(high) + 1))
        elif part:
            found.add(int(part))
    return found
