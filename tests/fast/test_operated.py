"""An operator's database read from its resource: recorded objects of the project's cluster
(a CloudNativePG Cluster and a mariadb-operator MariaDB, ready and not), as `kubectl get
-o json` gave them, and the spec's source that names one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oltplab.base.errors import OltplabError
from oltplab.distribute.kubernetes import operated_env
from oltplab.engines.endpoint import operated_password_env
from oltplab.kube.operated import CLUSTER, MARIADB, Operated, operated
from oltplab.kube.waiting import stuck
from oltplab.spec import parse_spec

RECORDED = Path(__file__).parents[1] / "data" / "kube"


def recorded(name: str) -> Any:
    return json.loads((RECORDED / f"{name}.json").read_text())


def test_a_ready_cluster_is_reached_by_its_primary_service_as_its_database_owner() -> None:
    found = operated(
        CLUSTER, recorded("cluster-ready"), recorded("cluster-ready-pods")["items"], "1.25.1"
    )
    assert found.endpoint == "pg-bench-rw.bench.svc.cluster.local:5432"
    assert (found.user, found.secret, found.secret_key) == ("sbtest", "pg-bench-app", "password")
    assert found.family == "postgresql" and found.problem == ""
    for said in ("cloudnative-pg 1.25.1", "Cluster bench/pg-bench", "instances 1",
                 "image oltplab.local/postgresql:15", "storage 1Gi of class oltplab-local",
                 "limits cpu 1, memory 1Gi", "pod pg-bench-1 on node oltplab-node"):  # fmt: skip
        assert said in found.platform, (said, found.platform)


def test_a_ready_mariadb_is_reached_by_its_service_as_the_user_it_names() -> None:
    found = operated(
        MARIADB, recorded("mariadb-ready"), recorded("mariadb-ready-pods")["items"], "25.10.2"
    )
    assert found.endpoint == "mariadb-bench.bench.svc.cluster.local:3306"
    assert (found.user, found.secret, found.secret_key) == (
        "sbtest", "mariadb-bench-sbtest", "password",
    )  # fmt: skip
    assert found.family == "mariadb" and found.problem == ""
    assert "mariadb-operator 25.10.2, MariaDB bench/mariadb-bench (replicas 1" in found.platform
    assert "pod mariadb-bench-0 on node oltplab-node" in found.platform


def test_a_mariadb_whose_image_the_node_lacks_says_so_in_the_operators_words() -> None:
    resource, pods = recorded("mariadb-no-image"), recorded("mariadb-no-image-pods")["items"]
    found = operated(MARIADB, resource, pods, "25.10.2")
    assert found.problem.startswith("condition Ready False ("), found.problem
    assert "pod mariadb-missing-0 container mariadb ErrImageNeverPull" in found.problem
    assert found.blocked.startswith("pod mariadb-missing-0 container mariadb ErrImageNeverPull")
    assert stuck(pods[0]).startswith("pod mariadb-missing-0 container mariadb ErrImageNeverPull")


def test_a_cluster_not_set_up_yet_gives_its_phase() -> None:
    resource = recorded("cluster-ready")
    resource["status"] = {"phase": "Setting up primary", "phaseReason": "Creating primary"}
    found = operated(CLUSTER, resource, [], "1.25.1")
    assert found.problem == "phase 'Setting up primary' (Creating primary)"
    assert found.blocked == ""  # still starting: submit waits for it
    assert found.platform.endswith(": no pod yet")


def test_what_the_pods_are_given_reads_back_the_same() -> None:
    found = operated(
        CLUSTER, recorded("cluster-ready"), recorded("cluster-ready-pods")["items"], "1.25.1"
    )
    assert Operated.from_json(found.to_json()) == found
    assert operated_password_env("mariadb-operator") == "OLTPLAB_PASSWORD_MARIADB_OPERATOR"


SPEC = 'workloads = ["oltp_read_only"]\n[[engines]]\nname = "pg"\nsource = {source}\n'


def test_a_spec_names_the_resource_and_nothing_else() -> None:
    spec = parse_spec(
        SPEC.format(source='{ kubernetes = { kind = "Cluster", name = "pg-bench" } }'), "s.toml"
    )
    [engine] = spec.engines
    assert engine.is_endpoint and str(engine.source.kubernetes) == "Cluster default/pg-bench"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("resource", "named"),
    [
        ('{ kind = "Deployment", name = "pg" }', "engines[0].source.kubernetes.kind"),
        ('{ kind = "Cluster", name = "PG" }', "engines[0].source.kubernetes.name"),
        ('{ kind = "Cluster", name = "pg", user = "root" }', "engines[0].source.kubernetes.user"),
    ],
)
def test_a_resource_oltplab_cannot_read_is_refused_naming_the_key(
    resource: str, named: str
) -> None:
    with pytest.raises(OltplabError) as refused:
        parse_spec(SPEC.format(source=f"{{ kubernetes = {resource} }}"), "s.toml")
    assert named in str(refused.value)


def test_pods_in_another_namespace_than_the_database_are_refused_before_submitting() -> None:
    spec = parse_spec(
        SPEC.format(source='{ kubernetes = { kind = "Cluster", name = "pg", namespace = "db" } }'),
        "s.toml",
    )
    with pytest.raises(OltplabError, match="submit with --namespace db"):
        operated_env(None, spec, "bench")  # type: ignore[arg-type]
