"""One matrix on many machines, for real: a two-node Slurm cluster started here runs a
two-engine, two-tier matrix as a job array; one shard's oltplab is killed mid-block and
the matrix is submitted again; the shards merge into one results directory whose report
marks the tier comparison cross-machine. And a Kubernetes pod's command, run here, makes
exactly its shard."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from oltplab.distribute.slurm import Slurm
from oltplab.plan import build_plan, cells_of
from oltplab.plan.blocks import Shard, shard_sessions
from oltplab.spec import parse_spec
from tests.support.cli import oltplab
from tests.support.engines import cells, processes_using, spec_text, wait_for
from tests.support.scheduler_contract import check_scheduler, distributed_run
from tests.support.sections import section
from tests.support.slurm_cluster import slurm_cluster

# Two engines of quick datadirs (MariaDB's take seconds to make, MySQL's a minute on a busy
# host): each shard prepares one engine's dataset from nothing and takes the other's from
# the run's store, and nothing here depends on the family.
ENGINES = ["mariadb-10.11.5", "mariadb-debian"]
TIERS = '[[tiers]]\nname = "128M"\nbuffer_pool = "128M"\n[[tiers]]\nname = "256M"\nbuffer_pool = "256M"\n'
# The load sampler only (it flags the cells the other shard disturbs): no check here reads
# the telemetry devices' files, and the engine summary alone costs 2-5 s a session.
LOAD_ONLY = "telemetry = false\n"


def tiny_spec() -> str:
    engines = "".join(f'[[engines]]\nname = "{name}"\n{LOAD_ONLY}' for name in ENGINES)
    return spec_text(
        [], threads=[1, 2], measure=3, extra=engines + TIERS, workloads=("oltp_read_only",)
    )


def database_files(root: Path) -> list[str]:
    """Folders holding an engine's datadir or its restore snapshot (InnoDB's files)."""
    return sorted(
        folder for folder, _, files in os.walk(root)
        if {"ibdata1", "mysql.ibd", "ib_logfile0", "aria_log_control"} & set(files)
    )  # fmt: skip


def squeue_empty(env: dict[str, str]) -> bool:
    said = subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True)
    return said.returncode == 0 and not said.stdout.strip()


def test_a_slurm_job_array_killed_and_resubmitted_merges_into_the_serial_matrix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "spec.toml").write_text(tiny_spec())
    assert oltplab("engines", "fetch", *ENGINES, cwd=tmp_path).returncode == 0
    with slurm_cluster(tmp_path / "slurm") as cluster:
        # Each node's temporary storage (both nodes are this machine: one folder).
        node_local = tmp_path / "node-local"
        node_local.mkdir()
        env = {**os.environ, **cluster, "TMPDIR": str(node_local)}
        # Slurm passes the contract every scheduler passes (tasks that only sleep).
        monkeypatch.setenv("SLURM_CONF", cluster["SLURM_CONF"])
        check_scheduler(
            Slurm(oltplab=("sh", "-c", "sleep 120", "oltplab")),
            distributed_run(tmp_path / "contract", "slurm"),
        )
        # What the cluster refuses is the environment's doing: exit 3, one line.
        refused = oltplab(
            "submit", "slurm", "spec.toml", "--shards", "2", "--results", "refused",
            "--partition", "no-such-partition", cwd=tmp_path, env=env,
        )  # fmt: skip
        assert refused.returncode == 3, refused.stdout + refused.stderr
        assert refused.stderr.count("\n") == 1 and "sbatch refused" in refused.stderr
        first = oltplab(
            "submit",
            "slurm",
            "spec.toml",
            "--shards",
            "2",
            "--results",
            "run",
            cwd=tmp_path,
            env=env,
        )
        assert first.returncode == 0, first.stderr
        assert "shard(s) 1, 2 of 2" in first.stdout
        run = tmp_path / "run"
        # Kill shard 1's oltplab once it has measured a cell of its block and is measuring
        # another (so that one is interrupted, whatever the cells' length).
        wait_for(
            lambda: {"done", "running"} <= {r["status"] for r in cells(run / "shard-1")},
            600,
            "shard 1's first cell done and its next running",
        )
        # While it runs, the engines' datadirs are on the node's disk, none under the
        # shared results directory.
        assert database_files(tmp_path / "run") == []
        assert database_files(node_local)
        victims = processes_using("--shard 1/2")
        assert victims
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        wait_for(lambda: squeue_empty(env), 600, "the job array to end")
        interrupted = [r["status"] for r in cells(run / "shard-1")]
        assert "done" in interrupted and set(interrupted) != {"done"}
        status = oltplab("status", "run", cwd=tmp_path, env=env)
        assert status.returncode == 0, status.stderr
        assert "1/2" in status.stdout and ("FAILED" in status.stdout or "CANCEL" in status.stdout)

        again = oltplab(
            "submit",
            "slurm",
            "spec.toml",
            "--shards",
            "2",
            "--results",
            "run",
            cwd=tmp_path,
            env=env,
        )
        assert again.returncode == 0, again.stderr
        assert "shard(s) 1 of 2" in again.stdout  # shard 2 was complete
        wait_for(lambda: squeue_empty(env), 600, "the second job array to end")
        time.sleep(1)

    jobs = json.loads((run / "distribute.json").read_text())["jobs"]
    assert [j["shards"] for j in jobs] == [[1, 2], [1]]
    merged = oltplab("merge", "run", "-o", "merged", cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    assert "measured on n1, n2" in merged.stdout

    # Every cell of the spec run serially, once each, done.
    spec = parse_spec(tiny_spec(), "spec")
    serial = sorted(c.key for c in cells_of(build_plan(spec)))
    rows = cells(tmp_path / "merged")
    assert sorted(r["key"] for r in rows) == serial
    assert {r["status"] for r in rows} == {"done"}
    # The killed cell ran again on resubmission: attempts say so, and no cell is doubled.
    assert any(r["attempts"] > 1 for r in cells(run / "shard-1"))
    # Each engine's dataset was prepared once, on one machine; the other took the snapshot.
    logs = "".join((run / s / "oltplab.log").read_text() for s in ("shard-1", "shard-2"))
    for engine in ENGINES:
        assert logs.count(f"{engine}: dataset prepared and snapshotted") == 1, engine
        assert f"{engine}: dataset taken from {run / 'snapshots'}" in logs, engine
    # Each shard set its engines up before measuring, from its K-th on, so that the two
    # prepared different datasets at once.
    for shard, first in (("shard-1", ENGINES[0]), ("shard-2", ENGINES[1])):
        said = [
            line
            for line in (run / shard / "oltplab.log").read_text().splitlines()
            if "dataset prepared and snapshotted" in line or "dataset taken from" in line
        ]
        assert said and f" {first}: " in said[0], (shard, said)

    # Both "nodes" are this machine's two cores: each shard is the other's other load, so
    # cells may be flagged interference; the findings here count them all.
    report = oltplab("report", "merged", "--include-flagged", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    md = (tmp_path / "merged" / "report" / "report.md").read_text()
    assert section(md, "Machines")
    lever = [line for line in md.splitlines() if line.startswith("| Buffer pool lever")]
    assert len(lever) == 2
    assert all("(cross-machine: n" in line for line in lever), lever
    assert all("inconclusive (different machines)" in line for line in lever)
    run_json = json.loads((tmp_path / "merged" / "run.json").read_text())
    assert sorted(s["machine"] for s in run_json["shards"]) == ["n1", "n2"]
    # Each machine's host facts, as each shard recorded them.
    for machine in ("n1", "n2"):
        facts = next(line for line in md.splitlines() if f"  - machine {machine} (shard" in line)
        assert "CPU governor" in facts and "swappiness" in facts and "?" not in facts, facts
    # The shards themselves report the same, without a merge.
    direct = oltplab(
        "report", "run/shard-1", "run/shard-2", "-o", "direct", "--include-flagged", cwd=tmp_path
    )
    assert direct.returncode == 0, direct.stderr
    assert "(cross-machine: n" in (tmp_path / "direct" / "report.md").read_text()


def test_a_kubernetes_pod_command_makes_exactly_its_shard(tmp_path: Path) -> None:
    # One engine in two tiers: two sessions, the second shard's one of them (its dataset
    # prepared from nothing, as in a pod).
    engine = f'[[engines]]\nname = "{ENGINES[0]}"\n{LOAD_ONLY}'
    spec = spec_text(
        [], threads=[1], measure=3, extra=engine + TIERS, workloads=("oltp_read_only",)
    )
    (tmp_path / "spec.toml").write_text(spec)
    done = oltplab(
        "submit", "k8s", "spec.toml", "--shards", "2", "--image", "oltplab:test",
        "--storage", "results", "--dry-run", "--results", "volume", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "nothing created" in done.stdout and "shard(s) 1, 2 of 2" in done.stdout
    (manifest,) = (tmp_path / "volume" / "k8s").glob("*.yaml")
    checked = subprocess.run(
        ["kubernetes-validate", "--strict", "-k", "1.31.0", str(manifest)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout
    job = yaml.safe_load(manifest.read_text())
    container = job["spec"]["template"]["spec"]["containers"][0]
    given = {e["name"]: e.get("value") for e in container["env"]}
    # The pod's own command, with its volumes where this machine keeps them: the second pod
    # of the Job runs the second shard it names.
    env = {
        **os.environ,
        "JOB_COMPLETION_INDEX": "1",
        "OLTPLAB_SHARDS": given["OLTPLAB_SHARDS"],
        "OLTPLAB_RUN": str(tmp_path / "volume"),
        "OLTPLAB_MACHINE": "k8s-node-b",
        # The pod's scratch mount (an emptyDir), where this machine keeps it.
        "OLTPLAB_WORK_DIR": str(tmp_path / "node-disk" / given["OLTPLAB_WORK_DIR"].lstrip("/")),
    }
    pod = subprocess.run(
        container["command"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900
    )
    assert pod.returncode == 0, pod.stdout + pod.stderr
    shard = tmp_path / "volume" / "shard-2"
    expected = sorted(
        c.key for c in cells_of(shard_sessions(parse_spec(spec, "spec"), Shard(2, 2)))
    )
    rows = cells(shard)
    assert sorted(r["key"] for r in rows) == expected and {r["status"] for r in rows} == {"done"}
    assert oltplab("status", str(shard), cwd=tmp_path).returncode == 0
    # The run's directory as a whole: each shard's state (no job was created), then a merge.
    status = oltplab("status", "volume", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert "2/2" in status.stdout and "Shards" in status.stdout
    merged = oltplab("merge", "volume/shard-2", "-o", "merged", cwd=tmp_path)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert sorted(r["key"] for r in cells(tmp_path / "merged")) == expected
    # The pod's datadirs went to its scratch (an emptyDir), not to the results volume.
    assert database_files(tmp_path / "volume") == []
