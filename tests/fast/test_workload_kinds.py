"""Every registered workload kind passes the workload contract (tests/support/workload_contract.py):
sbtest, built in, and the toy of tests/support/toys/toy_workload.py, added as any new kind is. That
the toy is all a new kind takes (one module with its one `register` line, its Lua script
beside it as data, and nothing of oltplab changed) is checked here too, as is what sbtest
keeps from before kinds: its snapshot key and its facts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oltplab.base.errors import SpecError
from oltplab.measure.gates import cell_definitions, workload_facts
from oltplab.plan import build_plan
from oltplab.plan.preparing import prepare_seconds
from oltplab.spec import cell_definition_digest, parse_spec
from oltplab.workloads.kind import WorkloadKind
from oltplab.workloads.kinds import dataset_key, kinds_used, registered
from tests.support.toys import classes_and_registers, code_words, toy_workload
from tests.support.workload_contract import check_workload_kind

SOURCE = Path(__file__).parents[2] / "src"
ENGINE = 'engines = [{name = "mysql-8.0.31"}]\n'
DATASET = "[dataset]\ntables = 2\ntable_size = 100\n"


@pytest.mark.parametrize("kind", registered(), ids=lambda kind: kind.name)
def test_every_registered_kind_passes_the_contract(kind: WorkloadKind, tmp_path: Path) -> None:
    check_workload_kind(kind, tmp_path)


def test_the_toy_is_among_them() -> None:
    assert [kind.name for kind in registered()] == ["sbtest", "tpcc", "toy"]


def test_a_new_kind_is_one_module_and_its_one_register_line() -> None:
    module = Path(toy_workload.__file__)
    tree, classes, registers = classes_and_registers(module)
    assert classes == ["ToyWorkload"] and len(registers) == 1
    assert tree.body[-1].value is registers[0]  # type: ignore[attr-defined]  # its last line
    # Its one file besides: the script it runs, data of the module, named as the module.
    assert module.with_suffix(".lua") == toy_workload.SCRIPT and toy_workload.SCRIPT.is_file()
    # Nothing of oltplab's code names it (its documentation may).
    naming = {"toy", "ToyWorkload", "toy_workload", "tests.support.toys.toy_workload", "toy_rows"}
    assert [p for p in SOURCE.rglob("*.py") if naming & code_words(p)] == []


def test_a_spec_names_a_registered_kind_and_sbtest_by_default() -> None:
    spec = parse_spec(ENGINE + 'workloads = ["balanced", {kind = "toy"}]\n', "t.toml")
    assert [(w.name, w.kind) for w in spec.workloads] == [("balanced", "sbtest"), ("toy", "toy")]
    with pytest.raises(SpecError, match="expected a workload kind: sbtest, tpcc, toy"):
        parse_spec(ENGINE + 'workloads = [{name = "x", kind = "tpc-h"}]\n', "t.toml")
    with pytest.raises(SpecError, match="are for kind 'sbtest'"):
        parse_spec(
            ENGINE + 'workloads = [{name = "x", kind = "toy", test = "oltp_insert"}]\n', "t.toml"
        )


def test_sbtest_alone_keeps_its_snapshot_key_and_facts_and_two_kinds_load_both() -> None:
    alone = parse_spec(ENGINE + 'workloads = ["oltp_read_write", "balanced"]\n' + DATASET, "t.toml")
    # The key snapshots were kept under before kinds: prepared data stays usable.
    old = json.dumps(alone.dataset.model_dump(exclude_none=True), sort_keys=True)
    assert dataset_key(alone) == old
    assert all("kind" not in fact for fact in workload_facts(alone).values())
    both = parse_spec(
        ENGINE + 'workloads = ["oltp_read_write", {kind = "toy"}, "balanced"]\n' + DATASET,
        "t.toml",
    )
    assert [kind.name for kind in kinds_used(both)] == ["sbtest", "toy"]
    assert dataset_key(both) == f"{old} + toy_rows=1000"
    assert prepare_seconds(both, 1) > prepare_seconds(alone, 1)
    toy = workload_facts(both)["toy"]
    assert toy["kind"] == "toy" and len(toy["script_sha256"]) == 64


def test_a_kind_s_facts_are_in_its_cells_definitions_and_sbtest_s_are_as_before() -> None:
    spec = parse_spec(ENGINE + 'workloads = ["balanced", {kind = "toy"}]\n' + DATASET, "t.toml")
    cells = [cell for session in build_plan(spec) for cell in session.cells]
    found = cell_definitions(spec, cells)
    plain = {c: cell_definition_digest(spec, c.engine, c.tier, c.workload) for c in cells}
    assert {c.workload for c in cells if found[c] == plain[c]} == {"balanced"}
    assert {c.workload for c in cells if found[c] != plain[c]} == {"toy"}
