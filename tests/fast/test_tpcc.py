"""The TPC-C-like kind's Python side (workloads/tpcc.py): its spec keys and their refusals,
the run's NURand constants, the decks, and the figures read from the Lua side's lines (the
format workloads/tpcc.lua prints; a real run's are checked in
tests/engine/test_tpcc.py); its two dialects' DDL files, and its cells' definitions, which
hold its files' content, not where the checkout sits."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from oltplab.analysis.latency import service_times
from oltplab.analysis.orders import order_figures
from oltplab.base.errors import SpecError
from oltplab.measure.gates import cell_definitions
from oltplab.plan import build_plan, cells_of
from oltplab.spec import Spec, parse_spec
from oltplab.workloads import tpcc
from oltplab.workloads.kinds import kind_of
from oltplab.workloads.tpcc import (
    C_LAST_DELTAS,
    DECK,
    TYPES,
    deck,
    nurand_constants,
    read_tpcc,
)

ENGINE = 'engines = [{name = "mysql-8.0.31"}]\n'


def spec(workload: str = '{kind = "tpcc"}', dataset: str = "warehouses = 4") -> Spec:
    return parse_spec(f"{ENGINE}workloads = [{workload}]\n[dataset]\n{dataset}\n", "t.toml")


@pytest.mark.parametrize("value", ["0", "-2", "2.5", '"3"', "true"])
def test_warehouses_must_be_a_positive_whole_number(value: str) -> None:
    with pytest.raises(SpecError) as caught:
        spec(dataset=f"warehouses = {value}")
    message = str(caught.value)
    assert "\n" not in message and "dataset.warehouses" in message
    assert "whole number of warehouses from 1" in message


def test_a_mix_must_add_up_to_100_and_name_the_kind_s_types() -> None:
    with pytest.raises(SpecError, match=r"mix must add up to 100 percent \(got 99"):
        spec('{kind = "tpcc", mix = {new_order = 45, payment = 43, delivery = 11}}')
    with pytest.raises(SpecError) as caught:
        spec('{kind = "tpcc", mix = {new_order = 50, refund = 50}}')
    problem = str(caught.value)
    assert "workloads[0] (tpcc): mix.refund: not a transaction type" in problem
    assert "new_order, payment, order_status, delivery, stock_level" in problem
    with pytest.raises(SpecError, match="mix is for kinds with transaction types"):
        spec('{name = "oltp_read_write", mix = {new_order = 100}}')


def test_a_workload_uses_at_most_the_warehouses_loaded() -> None:
    with pytest.raises(SpecError, match=r"options\.warehouses: .*from 1 to the 4 loaded"):
        spec('{kind = "tpcc", options = {warehouses = 5}}')
    fine = spec('{kind = "tpcc", options = {warehouses = 2}}')
    [workload] = fine.workloads
    assert kind_of(workload).check(fine, workload) is None
    call = kind_of(workload).call(fine, workload, 4)
    assert call.options["warehouses"] == 2 and call.options["mix"] == "10,10,1,1,1"
    assert kind_of(workload).prepare(fine, "prepare", 2).options["warehouses"] == 4


def test_the_c_last_delta_is_in_the_allowed_set_for_every_seed() -> None:
    for seed in range(300):
        for warehouses in (1, 2, 10):
            c = nurand_constants(seed, warehouses)
            assert abs(c.c_last - c.c_last_load) in C_LAST_DELTAS
            assert 0 <= c.c_last <= 255 and 0 <= c.c_id <= 1023 and 0 <= c.ol_i_id <= 8191
    assert 96 not in C_LAST_DELTAS and 112 not in C_LAST_DELTAS
    assert min(C_LAST_DELTAS) == 65 and max(C_LAST_DELTAS) == 119
    # Fixed per run: the same seed gives the same constants, which the facts store.
    assert nurand_constants(7, 2) == nurand_constants(7, 2)
    tpcc = spec()
    [workload] = tpcc.workloads
    facts = kind_of(workload).facts(tpcc, workload)
    assert facts["nurand"] == vars(nurand_constants(0, 4))


def test_the_deck_is_the_specification_s_23_or_the_mix_in_percent() -> None:
    [default] = spec().workloads
    assert deck(default) == DECK and sum(DECK.values()) == 23
    mixed = '{kind = "tpcc", mix = {new_order = 50, payment = 46, delivery = 4}}'
    [workload] = spec(mixed).workloads
    assert deck(workload) == {
        "new_order": 50, "payment": 46, "order_status": 0, "delivery": 4, "stock_level": 0,
    }  # fmt: skip
    facts = kind_of(default).facts(spec(), default)
    assert facts["mix"]["new_order"] == pytest.approx(43.48)


def lines(*said: str) -> str:
    return "\n".join(f"oltplab tpcc: {line}" for line in said)


OUTPUT = "\n".join(
    [
        "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)",
        lines(
            "thread 0 home 1",
            "thread 1 home 2",
            "district_orders before=6002",
            "second 1700000000 thread 0 new_order committed=9 rollbacks=1 retries=2 "
            "gave_up=0 errors=1213:2 latency=2.001:6,3.020:4",
            "second 1700000000 thread 1 payment committed=10 rollbacks=0 retries=0 "
            "gave_up=0 errors=- latency=1.010:10",
            "second 1700000001 thread 1 new_order committed=11 rollbacks=0 retries=1 "
            "gave_up=1 errors=40001:1,1213:1 latency=2.001:12",
            "district_orders after=6022",
            "consistency 1 ok",
            "consistency 2 ok",
            "consistency 3 failed 1,4: max(no_o_id)-min(no_o_id)+1=899, count=900",
            "consistency 4 ok",
        ),
        "General statistics:",
        "    total time:                          60.0012s",
    ]
)


def test_figures_are_read_per_type_with_nopm_both_ways() -> None:
    results = read_tpcc(OUTPUT)
    assert results is not None
    new_order, payment = results.transactions
    assert (new_order.name, new_order.committed, new_order.rollbacks) == ("new_order", 20, 1)
    assert (new_order.retries, new_order.gave_up) == (3, 1)
    assert new_order.errors == (("1213", 3), ("40001", 1))
    assert new_order.histogram == ((2.001, 18), (3.020, 4))
    assert new_order.ended == 22 and payment.committed == 10
    times = service_times(new_order.histogram)
    assert times is not None and times.percentiles == (2.001, 3.020, 3.020, 3.020)
    assert times.avg == pytest.approx((18 * 2.001 + 4 * 3.020) / 22) and times.max == 3.020
    minutes = 60.0012 / 60
    assert results.metrics["nopm"] == pytest.approx(20 / minutes)
    assert results.metrics["nopm_districts"] == pytest.approx(20 / minutes)
    assert results.metrics["tpm"] == pytest.approx(30 / minutes)  # committed of every type
    assert results.metrics["warehouses_active"] == 2
    assert (results.metrics["consistency_checked"], results.metrics["consistency_failed"]) == (4, 1)
    assert results.series == (("new_order", 1, 9.0), ("new_order", 2, 11.0))
    assert results.problems == (
        "consistency condition 3 failed: 1,4: max(no_o_id)-min(no_o_id)+1=899, count=900",
    )


def test_an_output_without_the_kind_s_lines_has_no_figures() -> None:
    assert read_tpcc("sysbench 1.0.20\nFATAL: cannot connect\n") is None
    assert all(name in TYPES for name in DECK)


def test_terminals_pace_a_workload_as_the_specification_s_terminals_would() -> None:
    paced = spec('{kind = "tpcc", rates = ["terminals", 50]}', "warehouses = 10")
    assert paced.workloads[0].rates == [5, 50]  # 0.48 a second per warehouse
    fewer = spec('{kind = "tpcc", rates = ["terminals"], options = {warehouses = 2}}')
    assert fewer.workloads[0].rates == [1]
    with pytest.raises(SpecError, match="rates"):
        spec('{name = "oltp_read_write", rates = ["terminals"]}')


def test_a_point_s_figures_say_nopm_tpm_efficiency_and_consistency_as_tpcc_users_read_them():
    results = read_tpcc(OUTPUT)
    assert results is not None
    figures = order_figures([results])
    assert figures.nopm == pytest.approx(20 / (60.0012 / 60))
    # go-tpc's efficiency: NOPM over 12.86 for each warehouse (two active here).
    assert figures.efficiency_pct == pytest.approx(100 * figures.nopm / (12.86 * 2))
    assert figures.consistency == "failed in 1 of 1 cell (flagged inconsistent)"
    held = read_tpcc(
        OUTPUT.replace(
            "consistency 3 failed 1,4: max(no_o_id)-min(no_o_id)+1=899, count=900",
            "consistency 3 ok",
        )
    )
    assert held is not None
    assert order_figures([held, held]).consistency == "4 conditions held in 2 cells"
    unchecked = read_tpcc("\n".join(x for x in OUTPUT.splitlines() if "consistency" not in x))
    assert unchecked is not None and order_figures([unchecked]).consistency == "not checked"


def statements(ddl: str) -> list[str]:
    """A DDL file's statements as tpcc_load.lua splits them, each on one line."""
    sql = re.sub(r"--[^\n]*", "", tpcc.SCRIPT.with_name(ddl).read_text())
    return [" ".join(part.split()) for part in sql.split(";") if part.strip()]


def test_the_two_dialects_ddl_differ_only_in_the_date_columns_type() -> None:
    mysql, postgresql = statements("tpcc_mysql.sql"), statements("tpcc_postgresql.sql")
    created = [s.split()[2] for s in mysql if s.startswith("CREATE TABLE")]
    assert created == ["warehouse", "district", "customer", "history", "orders",
                       "new_orders", "order_line", "item", "stock"]  # fmt: skip
    assert sum(s.count(" DATETIME") for s in mysql) == 4
    assert [s.replace(" DATETIME", " TIMESTAMP") for s in mysql] == postgresql
    assert {path.name for path in tpcc.HELPERS} >= {"tpcc_mysql.sql", "tpcc_postgresql.sql"}


def test_a_cell_s_definition_holds_the_files_content_not_where_the_checkout_sits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tpcc_spec = spec()
    cells = cells_of(build_plan(tpcc_spec))
    here = cell_definitions(tpcc_spec, cells)
    for path in (tpcc.SCRIPT, *tpcc.HELPERS):
        shutil.copy(path, tmp_path)
    monkeypatch.setattr(tpcc, "SCRIPT", tmp_path / tpcc.SCRIPT.name)
    monkeypatch.setattr(tpcc, "HELPERS", tuple(tmp_path / p.name for p in tpcc.HELPERS))
    assert cell_definitions(tpcc_spec, cells) == here
    ddl = tmp_path / "tpcc_postgresql.sql"
    ddl.write_text(ddl.read_text().replace("VARCHAR(500)", "VARCHAR(501)"))
    edited = cell_definitions(tpcc_spec, cells)
    assert all(edited[cell] != here[cell] for cell in cells)
