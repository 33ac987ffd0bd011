"""What every workload kind does, checked the same way for each registered kind (sbtest,
built in, and the toy of tests/support/toys/): a spec names it by its `kind`; its dataset has a
key, rows and words for the plan and the snapshot; its loader, its measuring call and its
warm-ups are sysbench calls that this sysbench loads through the gate every cell runs,
with options it knows; its facts are JSON. Loading and measuring it on a real engine is
tests/engine/ (the toy's: test_toy_workload.py).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from oltplab.measure.gates import GATE, check_workloads, gated, workload_facts
from oltplab.spec import Spec, parse_spec
from oltplab.spec.fields import KINDS, RESERVED_SYSBENCH_OPTIONS, SYSBENCH_TESTS
from oltplab.sysbench.driver import Call, find_sysbench, help_options, option_key
from oltplab.workloads.kind import WorkloadKind
from oltplab.workloads.kinds import dataset_key, kind_of, kinds_used, registered


def _spec(kind: WorkloadKind, tmp_path: Path) -> Spec:
    text = (
        'engines = [{name = "mysql-8.0.31"}]\n'
        f"workloads = [{kind.example}]\n"
        "[dataset]\ntables = 2\ntable_size = 100\n"
        "[protocol]\nwarmup_ro_seconds = 3\nwarmup_rw_seconds = 4\n"
    )
    (tmp_path / "spec.toml").write_text(text)
    return parse_spec(text, str(tmp_path / "spec.toml"))


def _loads(sysbench: str, spec: Spec, call: Call) -> dict[str, str]:
    """The options sysbench knows for this call run through the gate, as every cell runs;
    fails unless it loads."""
    through = gated(call, spec, 1, {}, GATE)
    result = subprocess.run(
        [sysbench, through.test, "help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **through.env},
        check=False,
    )
    assert result.returncode == 0, f"{call.test} through the gate: {result.stdout}{result.stderr}"
    return help_options(result.stdout)


def _is_test(call: Call) -> None:
    assert call.test in SYSBENCH_TESTS or Path(call.test).is_file(), call.test
    assert call.threads >= 1
    reserved = {option_key(key) for key in call.options} & RESERVED_SYSBENCH_OPTIONS
    assert not reserved, f"{call.test}: sets the runner's own options {reserved}"


def check_workload_kind(kind: WorkloadKind, tmp_path: Path) -> None:
    assert kind in registered() and kind.name in KINDS
    spec = _spec(kind, tmp_path)
    [workload] = spec.workloads
    assert workload.kind == kind.name and kind_of(workload) is kind
    assert kinds_used(spec) == [kind]

    # Its dataset: a key of one printable line, the same for the same spec (a snapshot
    # is reused on it), the rows the plan counts, and words for the progress line.
    key = kind.dataset_key(spec)
    assert key and key.isprintable() and key == kind.dataset_key(_spec(kind, tmp_path))
    assert dataset_key(spec) == key
    assert isinstance(kind.dataset_rows(spec), int) and kind.dataset_rows(spec) > 0
    assert kind.describe_dataset(spec).strip()

    sysbench = find_sysbench()
    for action in ("prepare", "cleanup"):
        loader = kind.prepare(spec, action, 2)
        assert loader.action == action and loader.args("sysbench", tmp_path / "c")[-1] == action
        _is_test(loader)

    run = kind.call(spec, workload, 3)
    assert run.action == "run" and "--threads=3" in run.args("sysbench", tmp_path / "c")
    _is_test(run)
    known = _loads(sysbench, spec, run)
    unknown = [key for key in run.options if option_key(key) not in known]
    assert not unknown, f"{run.test}: sysbench does not know {unknown}"
    check_workloads(spec, sysbench, "contract")  # what a run checks before anything starts

    warm_ups = kind.warm_ups(spec, workload)
    assert warm_ups, "a session warms up before it measures"
    for warm_up, seconds in warm_ups:
        assert warm_up.kind == kind.name and isinstance(seconds, int) and seconds >= 0
        _is_test(kind.call(spec, warm_up, 2))

    facts = workload_facts(spec)[workload.name]
    assert json.loads(json.dumps(facts)) == facts
    assert isinstance(facts.get("read_only"), bool)
