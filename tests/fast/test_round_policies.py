"""Round policies and orders: the built-in policies a request asks for by its options, in
their order, and the toys of tests/support/toys/toy_policy.py and toy_order.py, each added
as any new policy or order is (one class, its one `register` line, nothing of oltplab
changed; tests/engine/test_toy_policy.py and test_toy_order.py run them)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from oltplab.measure.request import RunRequest
from oltplab.measure.rounds import RerunDisturbed, UntilCv, asked_for
from oltplab.plan import build_plan
from oltplab.spec import parse_spec
from tests.support.toys import classes_and_registers, code_words

ROOT = Path(__file__).parents[2]
SOURCE = ROOT / "src" / "oltplab"
# Read, not imported: imported, it would register itself for every run in this process.
TOY = ROOT / "tests" / "support" / "toys" / "toy_policy.py"
TOY_ORDER = ROOT / "tests" / "support" / "toys" / "toy_order.py"
SPEC = 'workloads = ["oltp_read_only"]\n[[engines]]\nname = "mariadb-10.11.5"\n'


def test_a_request_asks_for_the_policies_its_options_name_in_their_order() -> None:
    spec = parse_spec(SPEC, "s.toml")
    plain = RunRequest(spec, SPEC, "s.toml", Path("out"))
    sessions = build_plan(spec)

    def built_in(request: RunRequest) -> list[type]:
        # A plugin's policy may be registered in this process too (a test that loads every
        # toy): the built-in ones are checked.
        kinds = [type(p) for p in asked_for(request, sessions)]
        return [kind for kind in kinds if kind in (UntilCv, RerunDisturbed)]

    assert built_in(plain) == []
    assert built_in(replace(plain, until_cv=0.02, rerun_disturbed=True)) == [
        UntilCv,
        RerunDisturbed,
    ]


def test_a_new_policy_is_one_class_and_its_one_register_line() -> None:
    tree, classes, registers = classes_and_registers(TOY)
    assert classes == ["ThreeBatches"] and len(registers) == 1
    assert tree.body[-1].value is registers[0]  # type: ignore[attr-defined]  # its last line
    naming = {"ThreeBatches", "toy_policy", "tests.support.toys.toy_policy"}
    assert [p for p in SOURCE.rglob("*.py") if naming & code_words(p)] == []


def test_a_new_order_is_one_class_and_its_one_register_line() -> None:
    tree, classes, registers = classes_and_registers(TOY_ORDER)
    assert classes == ["LastFirst"] and len(registers) == 1
    assert tree.body[-1].value.func is registers[0]  # type: ignore[attr-defined]  # last line
    naming = {"LastFirst", "last-first", "toy_order", "tests.support.toys.toy_order"}
    assert [p for p in SOURCE.rglob("*.py") if naming & code_words(p)] == []
