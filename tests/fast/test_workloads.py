"""What sysbench 1.0.20 says it accepts, read from its recorded help."""

from pathlib import Path

import pytest

from oltplab.spec import parse_spec
from oltplab.sysbench.driver import (
    Call,
    ConnectionTarget,
    connection_options,
    help_options,
    help_rand_types,
    value_problem,
)
from oltplab.workloads.sbtest import MIX_SCRIPT, distribution, sysbench_test

HELP = Path(__file__).parent.parent / "data" / "sysbench_help"


def test_general_help_lists_options_with_their_kind_and_the_distributions():
    text = (HELP / "general.txt").read_text()
    options = help_options(text)
    assert options["rate"] == "N" and options["rand-pareto-h"] == "N"
    assert options["debug"] == "bool" and options["mysql-ignore-errors"] == "LIST"
    assert options["thread-stack-size"] == "SIZE" and options["pgsql-host"] == "STRING"
    assert help_rand_types(text) == ("uniform", "gaussian", "special", "pareto")


def test_a_test_and_the_mix_script_list_their_own_options_in_one_spelling():
    oltp = help_options((HELP / "oltp_read_write.txt").read_text())
    assert oltp["point-selects"] == "N" and oltp["skip-trx"] == "bool"
    mix = help_options((HELP / "oltp_read_write_pct.txt").read_text())
    assert mix["read-percent"] == "N" and mix["write-percent"] == "N"


@pytest.mark.parametrize(
    ("value", "kind", "problem"),
    [
        (3, "N", None),
        (0.3, "N", None),
        ("12", "N", None),
        ("many", "N", "expects a number"),
        (True, "N", "expects a number"),
        (True, "bool", None),
        ("off", "bool", None),
        (1, "bool", "expects true or false"),
        ("innodb", "STRING", None),
    ],
)
def test_values_are_checked_against_the_kind_of_option(value, kind, problem):
    assert value_problem(value, kind) == problem


def test_each_workload_runs_its_test_script_and_distribution():
    spec = parse_spec(
        'engines = [{name = "mysql-8.0.31"}]\n'
        'workloads = ["oltp_insert", "balanced", {name = "p", test = "oltp_read_only",'
        ' rand_type = "pareto"}]\n[dataset]\nrand_type = "special"\nrand_pareto_h = 0.4\n',
        "t.toml",
    )
    insert, balanced, pareto = spec.workloads
    assert sysbench_test(insert) == "oltp_insert" and sysbench_test(balanced) == str(MIX_SCRIPT)
    assert sysbench_test(pareto) == "oltp_read_only"
    assert distribution(spec, insert) == ("special", None)  # h only goes with pareto
    assert distribution(spec, pareto) == ("pareto", 0.4)


def test_postgresql_targets_get_the_pgsql_driver(tmp_path):
    target = ConnectionTarget("127.0.0.1", 5433, "sbtest", "s3cret", driver="pgsql")
    text = connection_options(target)
    assert "db-driver=pgsql\n" in text and "pgsql-port=5433\n" in text
    assert "pgsql-password=s3cret\n" in text and "mysql" not in text
    call = Call(
        "oltp_read_write",
        "run",
        threads=2,
        tables=1,
        table_size=10,
        rand_type="pareto",
        rand_pareto_h=0.3,
    )
    args = call.args("sysbench", tmp_path / "connection.cnf")
    assert "s3cret" not in " ".join(args)
    assert "--rand-pareto-h=0.3" in args


def test_every_script_a_cell_is_run_with_is_where_oltplab_looks_for_it():
    """The gates every cell runs through and the kinds' own scripts are shipped beside the
    modules that name them (a move that misses one fails every cell that uses it)."""
    from oltplab.measure.gates import GATE
    from oltplab.measure.sliced import GATE as SLICED_GATE
    from oltplab.workloads.tpcc import SCRIPT as TPCC_SCRIPT

    for script in (GATE, SLICED_GATE, MIX_SCRIPT, TPCC_SCRIPT):
        assert script.is_file(), script
