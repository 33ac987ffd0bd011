"""One matrix on many machines, without engines: blocks and their deal, merge and its
refusals, comparisons across machines, and what the schedulers are given."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml

from oltplab.analysis.dataset import load
from oltplab.analysis.estimate import DIFFERENT_MACHINES, PointSample, across_machines
from oltplab.analysis.model import AnalysisOptions, analyse
from oltplab.base.errors import OltplabError
from oltplab.distribute import kubernetes, slurm
from oltplab.distribute.layout import Distributed
from oltplab.distribute.merge import merge
from oltplab.distribute.shard_canary import canary_spec
from oltplab.kube.client import Api
from oltplab.plan import build_plan, cells_of
from oltplab.plan.blocks import Block, Shard, assign, blocks, shard_sessions
from oltplab.spec import parse_spec
from oltplab.store.ledger import Ledger
from tests.support.cli import oltplab
from tests.support.shards import BINARY, SPEC, fake_shard


def test_blocks_keep_engines_and_repetitions_together() -> None:
    spec = parse_spec(SPEC, "spec")
    found = blocks(spec)
    # 3 tiers x 2 workloads, one placement
    assert len(found) == 6
    for block in found:
        assert {c.engine for c in block.cells} == {"mysql-8.0.31", "mariadb-10.11.5"}
        assert {c.repetition for c in block.cells} == {1, 2}
        assert len({(c.tier, c.workload) for c in block.cells}) == 1
    # read-write sessions warm up twice (ro + rw): 30 s more per session than read-only
    rw = next(b for b in found if b.key[2] == ("workload", "oltp_read_write"))
    ro = next(b for b in found if b.key[2] == ("workload", "oltp_read_only"))
    assert rw.seconds - ro.seconds == 20 * 4  # 2 engines x 2 rounds


@pytest.mark.parametrize("count", [1, 2, 3, 4, 6])
def test_every_cell_goes_to_exactly_one_shard(count: int) -> None:
    spec = parse_spec(SPEC, "spec")
    everything = cells_of(build_plan(spec))
    dealt = [cells_of(shard_sessions(spec, Shard(k, count))) for k in range(1, count + 1)]
    assert sorted(c.key for cells in dealt for c in cells) == sorted(c.key for c in everything)
    # the plan's interleaved order stays within a shard
    first = dealt[0]
    assert [c for c in everything if c in set(first)] == first
    # the deal is the same every time, and balanced (LPT)
    again = assign(blocks(spec), count)
    totals = [sum(b.seconds for b in shard) for shard in again]
    assert max(totals) - min(totals) <= max(b.seconds for b in blocks(spec))


def test_blocks_longest_first_are_then_evened_by_moves_and_swaps() -> None:
    """24 read-write blocks of 2.55 h and 24 read-only ones of 2.13 h on 20 shards: dealt
    longest first, 8 shards get one of each and a third; three read-only ones to 8 shards
    and two read-write ones to 12 is the best there is."""
    found = [
        Block((("threads", str(i)), ("workload", kind)), (), hours * 3600)
        for kind, hours in (("rw", 2.55), ("ro", 2.13))
        for i in range(24)
    ]
    dealt = assign(found, 20)
    assert sorted(b.key for shard in dealt for b in shard) == sorted(b.key for b in found)
    totals = sorted(round(sum(b.seconds for b in shard) / 3600, 2) for shard in dealt)
    assert totals == [5.1] * 12 + [6.39] * 8
    assert assign(found, 20) == dealt  # the same deal every time


def test_a_finer_cut_and_bad_shards() -> None:
    spec = parse_spec(SPEC + 'block = ["tier", "workload", "threads"]\n', "spec")
    assert len(blocks(spec)) == 12
    with pytest.raises(OltplabError, match="fewer than 13 shards"):
        shard_sessions(spec, Shard(1, 13))
    for bad, said in (("3/2", "between 1 and N"), ("x", "expected K/N"), ("0/4", "between")):
        with pytest.raises(OltplabError, match=said):
            Shard.parse(bad)
    with pytest.raises(Exception, match="engine 'mysql-9' is not one of the spec's engines"):
        parse_spec(SPEC.replace("mysql-8.0.31 256M", "mysql-9 256M"), "spec")


def test_the_canary_is_the_spec_cut_to_one_short_cell() -> None:
    spec = parse_spec(SPEC, "spec")
    canary, text = canary_spec(spec)
    assert [e.name for e in canary.engines] == ["mysql-8.0.31"]
    assert [t.name for t in canary.tiers] == ["256M"]
    assert [w.name for w in canary.workloads] == ["oltp_read_only"]
    assert canary.protocol.threads == [1] and canary.protocol.measure_seconds == 30
    assert canary.dataset == spec.dataset
    # the engine's settings are the spec's: same max_connections as the matrix
    assert (
        canary.resolve(canary.tiers[0]).max_connections
        == spec.resolve(spec.tiers[1]).max_connections
    )
    assert parse_spec(text, "again").digest() == canary.digest()


def test_merge_makes_one_directory_and_refuses_what_does_not_fit(tmp_path: Path) -> None:
    spec = SPEC.replace("canary = ", "# canary = ")
    one = fake_shard(tmp_path / "one", spec, Shard(1, 2), "node-a", 100)
    two = fake_shard(tmp_path / "two", spec, Shard(2, 2), "node-b", 100)
    # A report a kill left half-written in a shard is no result of it.
    (two / ".report.partial-1-0a0b0c0d").mkdir()
    merged = merge([one, two], tmp_path / "merged")
    assert not list((tmp_path / "merged").glob(".report.*"))
    assert {s.shard for s in merged} == {"1/2", "2/2"}
    ledger = Ledger.open(tmp_path / "merged", create=False)
    try:
        keys = [row.key for row in ledger.cells()]
        machines = ledger.machines()
    finally:
        ledger.close()
    planned = cells_of(build_plan(parse_spec(spec, "spec")))
    assert sorted(keys) == sorted(c.key for c in planned) and len(keys) == len(set(keys))
    assert set(machines.values()) == {"node-a", "node-b"}
    assert (tmp_path / "merged" / "journal.jsonl").is_file()

    # a report of the merge, and of the shards themselves, tells the machines apart
    for sources in ([tmp_path / "merged"], [one, two]):
        analysis = analyse(load(sources), AnalysisOptions())
        assert analysis.dataset.machines == ["node-a", "node-b"]
        lever = [f for f in analysis.findings if f.kind == "buffer-pool-lever"]
        apart = [f for f in lever if "(cross-machine: node-" in f.detail]
        where = {(c.scenario, c.tier): c.machine for c in analysis.dataset.cells}
        # a lever whose two tiers were measured on two machines says so, and only such
        assert apart == [
            f for f in lever
            if len({where[(f.scenario, tier)] for tier in f.tier.split("/")}) == 2
        ] and apart  # fmt: skip
        # no canary: a comparison across machines is undecided, never a false verdict
        assert all("inconclusive (different machines)" in f.detail for f in apart)
        assert not any("different machines" in f.detail for f in lever if f not in apart)
        # an engine comparison is within a block: one machine, a real interval
        assert all(r.change and r.change.machines is None for r in analysis.progression)

    with pytest.raises(OltplabError, match=r"holds done cell .* which .* holds too"):
        merge([one, one], tmp_path / "twice")
    other = fake_shard(tmp_path / "other", spec.replace("threads = [1, 4]", "threads = [1]"),
                       Shard(2, 2), "node-c", 100)  # fmt: skip
    with pytest.raises(OltplabError, match="a shard of another spec"):
        merge([one, other], tmp_path / "mixed")
    with pytest.raises(OltplabError, match="not a shard: no `oltplab run --shard K/N`"):
        merge([tmp_path / "merged", one], tmp_path / "again")
    with pytest.raises(OltplabError, match="already exists; merge into a new directory"):
        merge([one, two], tmp_path / "merged")
    # What a shard's run.json says is checked against its ledger and the other shards.
    run_json = two / "run.json"
    kept = run_json.read_text()
    for edit, refusal in [
        (lambda t: t.replace("b2" * 32, "c3" * 32), "engine mariadb-10.11.5 binary sha256 c3"),
        (lambda t: t.replace("threads = [1, 4]", "threads = [4]"), "its spec is not the one"),
    ]:
        run_json.write_text(edit(kept))
        with pytest.raises(OltplabError, match=refusal):
            merge([one, two], tmp_path / "edited")
    run_json.unlink()
    with pytest.raises(OltplabError, match=r"run.json: missing; without it"):
        merge([one, two], tmp_path / "edited")
    run_json.write_text(kept)
    rebuilt = {**BINARY, "mariadb-10.11.5": "d4" * 32}
    rebuilt_shard = fake_shard(tmp_path / "rebuilt", spec, Shard(2, 2), "node-b", 100, rebuilt)
    with pytest.raises(OltplabError, match="binary sha256 d4d4"):
        merge([one, rebuilt_shard], tmp_path / "edited")
    # A refused merge leaves nothing behind: neither the output nor a half-made one.
    assert not (tmp_path / "edited").exists()
    assert not list(tmp_path.glob(".edited.merging-*"))
    # through the command line: one line each, exit 2
    done = oltplab("merge", "one", "other", "-o", "x", cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


def test_across_machines_carries_the_spread_or_says_it_cannot() -> None:
    rng = np.random.default_rng(7)
    a = PointSample({1: rng.normal(1100, 20, 100)})
    b = PointSample({1: rng.normal(1000, 20, 100)})
    undecided = across_machines(a, b, ("n1", "n2"), None, (1e-6, 1e-6))
    assert undecided.verdict == DIFFERENT_MACHINES and undecided.low_pct is None
    assert undecided.cross_machine == " (cross-machine: n1 vs n2)"
    # machines 2% apart (sd of log), 5 of them: +10% stands out; 10% apart it does not
    tight = across_machines(a, b, ("n1", "n2"), (0.02**2, 5), (1e-6, 1e-6))
    assert tight.verdict == "significant" and tight.low_pct < tight.diff_pct < tight.high_pct
    loose = across_machines(a, b, ("n1", "n2"), (0.10**2, 5), (1e-6, 1e-6))
    assert loose.verdict == "not significant"
    assert loose.high_pct - loose.low_pct > tight.high_pct - tight.low_pct


def test_the_slurm_job_runs_its_task_s_shard(tmp_path: Path) -> None:
    found = Distributed(tmp_path / "run", "abc", 12, "slurm")
    script = slurm.job_script(found, ["/usr/bin/python3", "-m", "oltplab"])
    assert '--shard "$K/12"' in script
    # Datadirs on the node's own temporary storage unless the submitter names a place.
    assert (
        'export OLTPLAB_WORK_DIR="${OLTPLAB_WORK_DIR:-${SLURM_TMPDIR:-${TMPDIR:-/tmp}}}"' in script
    )
    assert f'--results "{tmp_path}/run/shard-$(printf \'%02d\' "$K")"' in script
    assert Shard(3, 12).folder == "shard-03"
    with pytest.raises(OltplabError, match="oltplab sets --array itself"):
        slurm.check_sbatch_args(["--mem=4G", "--array=1-3"])


def test_kubernetes_manifests_pass_the_api_schemas(tmp_path: Path) -> None:
    request = kubernetes.Request(
        "registry.example/oltplab:1", "bench-results", "runs/a", "bench",
        ("node-role/bench=true",), "16", "64Gi",
    )  # fmt: skip
    job = kubernetes.job_manifest(request, "oltplab-a-1", "oltplab-a", 6, [2, 5])
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    checked = subprocess.run(
        ["kubernetes-validate", "--strict", "-k", "1.31.0", str(path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # Only the shards asked for, one pod each, and each pod knows which it runs.
    assert job["spec"]["completionMode"] == "Indexed" and job["spec"]["completions"] == 2
    pod = job["spec"]["template"]["spec"]
    assert pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    container = pod["containers"][0]
    assert container["resources"]["requests"] == {"cpu": "16", "memory": "64Gi"}
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["OLTPLAB_SHARDS"] == "2 5" and env["OLTPLAB_RUN"] == "/results/runs/a"
    assert json.dumps(pod).count("JOB_COMPLETION_INDEX") == 1
    assert job["spec"]["activeDeadlineSeconds"] > 0 and job["spec"]["ttlSecondsAfterFinished"] > 0
    assert restricted_violations(pod) == []
    # The engines' datadirs on the node's own disk; the shared volume holds results only.
    scratch = next(m["mountPath"] for m in container["volumeMounts"] if m["name"] == "scratch")
    assert env["OLTPLAB_WORK_DIR"] == scratch
    assert {"name": "scratch", "emptyDir": {}} in pod["volumes"]
    # An image that carries its engines keeps its own cache.
    own = kubernetes.job_manifest(
        kubernetes.Request("oltplab.local/o:1", "c", engine_cache="image"), "j", "r", 2, [1]
    )
    assert "OLTPLAB_CACHE" not in json.dumps(own)


def test_a_jobs_index_ranges_read_as_the_api_server_writes_them() -> None:
    assert kubernetes._indexes("0,2-4,7") == {0, 2, 3, 4, 7}
    assert kubernetes._indexes(None) == set() and kubernetes._indexes("") == set()


class Refused(Exception):
    """What the kubernetes client raises when the API server says no."""

    status, reason = 403, "Forbidden"


class ServicesUnreadable:
    def read_namespaced_service(self, name: str, namespace: str) -> object:
        raise Refused


def test_an_endpoint_service_the_user_may_not_read_says_so_where_its_platform_goes() -> None:
    spec = parse_spec(
        'workloads = ["oltp_read_only"]\n[[engines]]\nname = "db"\n'
        'source = { endpoint = "db.bench.svc.cluster.local:3306", user = "sb", '
        'password_env = "PW" }\n',
        "s.toml",
    )
    api = Api(None, batch=None, core=ServicesUnreadable(), apps=None, custom=None, error=Refused)
    found = kubernetes.endpoint_platforms(api, spec)
    assert found == {"db": "Kubernetes Service db.bench: its pods not read (403 Forbidden)"}


def test_runs_in_folders_of_the_same_name_never_share_a_job_name(tmp_path: Path) -> None:
    first, second = (
        kubernetes.run_label(tmp_path / "a" / "run"),
        kubernetes.run_label(tmp_path / "b" / "run"),
    )
    assert first != second and first.startswith("oltplab-run-")
    assert all(len(label) <= 52 for label in (first, kubernetes.run_label(tmp_path / ("x" * 90))))


# The volume types the "restricted" Pod Security Standard allows.
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                      "persistentVolumeClaim", "projected", "secret"}  # fmt: skip


def restricted_violations(pod: dict) -> list[str]:
    """What the Kubernetes "restricted" Pod Security Standard (v1.31) refuses in a pod spec:
    the baseline's host namespaces, host paths and privilege, and the restricted level's
    volume types, privilege escalation, running as root, seccomp and capabilities."""
    found = []
    for host in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(host):
            found.append(host)
    for volume in pod.get("volumes", []):
        kinds = set(volume) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            found.append(f"volume {volume['name']}: {kinds - RESTRICTED_VOLUMES}")
    pod_context = pod.get("securityContext", {})
    for container in pod.get("containers", []) + pod.get("initContainers", []):
        context = container.get("securityContext", {})
        name = container["name"]
        if context.get("privileged"):
            found.append(f"{name}: privileged")
        if context.get("allowPrivilegeEscalation") is not False:
            found.append(f"{name}: allowPrivilegeEscalation must be false")
        if not context.get("runAsNonRoot", pod_context.get("runAsNonRoot")):
            found.append(f"{name}: runAsNonRoot must be true")
        if context.get("runAsUser", pod_context.get("runAsUser")) == 0:
            found.append(f"{name}: runAsUser 0")
        seccomp = context.get("seccompProfile", pod_context.get("seccompProfile", {}))
        if seccomp.get("type") not in ("RuntimeDefault", "Localhost"):
            found.append(f"{name}: seccompProfile must be RuntimeDefault or Localhost")
        capabilities = context.get("capabilities", {})
        if "ALL" not in capabilities.get("drop", []):
            found.append(f"{name}: capabilities must drop ALL")
        if set(capabilities.get("add", [])) - {"NET_BIND_SERVICE"}:
            found.append(f"{name}: adds capabilities")
        if any("hostPort" in port for port in container.get("ports", [])):
            found.append(f"{name}: hostPort")
    return found


def test_the_restricted_check_refuses_what_the_standard_refuses() -> None:
    """The checker above catches a pod the restricted level rejects, rule by rule."""
    bad = {
        "hostNetwork": True,
        "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
        "containers": [{"name": "c", "securityContext": {"privileged": True,
                                                         "capabilities": {"add": ["SYS_ADMIN"]}}}],
    }  # fmt: skip
    said = " ".join(restricted_violations(bad))
    for rule in ("hostNetwork", "hostPath", "privileged", "allowPrivilegeEscalation",
                 "runAsNonRoot", "seccompProfile", "drop ALL", "adds capabilities"):  # fmt: skip
        assert rule in said, rule


def test_submit_k8s_refuses_a_folder_the_pods_cannot_write_before_making_anything(
    tmp_path: Path,
) -> None:
    """(issue 60) A first `submit k8s` made the results folder as root, then refused it
    because the pods' user (uid 10001) could not write it: now one line, exit 2, and
    nothing made, for a folder that is not there as for one that is root's."""
    (tmp_path / "s.toml").write_text(SPEC)
    for results, made in ((tmp_path / "new", False), (tmp_path / "roots", True)):
        if made:
            results.mkdir(mode=0o755)
        refused = oltplab(
            "submit", "k8s", "s.toml", "--shards", "1", "--results", str(results),
            "--image", "oltplab.local/oltplab:1", "--storage", "results", cwd=tmp_path,
        )  # fmt: skip
        assert refused.returncode == 2, refused.stdout + refused.stderr
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and "uid 10001" in lines[0] and f"chown 10001 {results}" in lines[0]
        assert results.exists() == made and (not made or not any(results.iterdir()))
