"""Workload options that change what a cell is (issue 58, M-2, L-7, L-13, L-1): sysbench
options the runner sets or that its results would not show, TPC-C-like options out of range
or set by oltplab itself, rates given twice, a workload name that is no string. Each is
refused when the spec is read, by `plan` as by `run`, with one line naming the key, and
nothing is created."""

from __future__ import annotations

from pathlib import Path

import pytest

from oltplab.spec.fields import RESERVED_SYSBENCH_OPTIONS
from oltplab.sysbench.driver import help_options
from tests.support.cli import assert_one_line_error, assert_run_refuses, oltplab

ENGINE = 'engines = [{name = "mariadb-debian"}]\n'
HELP = Path(__file__).parent.parent / "data" / "sysbench_help"


# --- M-2: sysbench options that change what a cell is ---------------------------------------

# General and driver options of sysbench 1.0.20 a workload may give: the distribution's
# tuning, prepared statements, compression, the stack of a thread.
GIVEABLE = {
    "thread-stack-size", "rand-spec-iter", "rand-spec-pct", "rand-spec-res", "rand-seed",
    "db-ps-mode", "mysql-compression",
}  # fmt: skip
SET_AS_KEYS = {"rand-type", "rand-pareto-h"}  # the workload's own keys


def test_every_sysbench_option_is_reserved_or_known_harmless():
    """sysbench 1.0.20's own --help is the list: each general or driver option is either
    one a workload may give or one it may not."""
    listed = set(help_options((HELP / "general.txt").read_text()))
    assert listed - RESERVED_SYSBENCH_OPTIONS - GIVEABLE - SET_AS_KEYS == set()
    assert {"num-threads", "max-time", "max-requests", "tx-rate", "mysql-dry-run"} <= listed


UNSEEN = [
    ("num_threads = 8", "option 'num_threads' is set by oltplab"),
    ("max_time = 5", "option 'max_time' is set by oltplab"),
    ("max_requests = 5", "option 'max_requests' is set by oltplab"),
    ("tx_rate = 100", "option 'tx_rate' is set by oltplab"),
    ("rate = 100", "option 'rate' is set by oltplab"),
    ('mysql_dry_run = "on"', "option 'mysql_dry_run' changes what a cell measures"),
    ('mysql_ignore_errors = "all"', "option 'mysql_ignore_errors' changes what a cell"),
    ('forced_shutdown = "1"', "option 'forced_shutdown' changes what a cell measures"),
    ('mysql_ssl = "on"', "option 'mysql_ssl' changes what a cell measures"),
    ('db_debug = "on"', "option 'db_debug' changes what a cell measures"),
    ("verbosity = 0", "option 'verbosity' changes what a cell measures"),
    ('report_checkpoints = "10"', "option 'report_checkpoints' changes what a cell"),
]


@pytest.mark.parametrize(("option", "message"), UNSEEN, ids=[u[0] for u in UNSEEN])
def test_a_sysbench_option_that_changes_the_cell_unrecorded_is_refused(tmp_path, option, message):
    spec = ENGINE + f'workloads = [{{test = "oltp_read_write", options = {{{option}}}}}]\n'
    assert_run_refuses(tmp_path, spec, f"workloads[0].options: {message}")


# --- L-7, L-13: the TPC-C-like kind's options, refused by plan as by run ---------------------

TPCC = ENGINE + 'workloads = [{kind = "tpcc"%s}]\n[dataset]\nwarehouses = 2\n'
TPCC_REFUSED = [
    (", options = {retries = -1}", "options.retries: expected a whole number from 0 to 1,000"),
    (", options = {retries = 1000000}", "options.retries: expected a whole number from 0"),
    (', options = {retries = "3"}', "options.retries: expected a whole number from 0"),
    (
        ', mix = {new_order = 50, payment = 50}, options = {mix = "1,0,0,0,0"}',
        "options.mix: set by oltplab from the workload's mix",
    ),
    (", options = {c_id = 5}", "options.c_id: set by oltplab from [protocol] seed"),
    (", options = {warehouses = 3}", "options.warehouses: expected a whole number from 1 to the 2"),
]


@pytest.mark.parametrize(("keys", "message"), TPCC_REFUSED, ids=[t[0] for t in TPCC_REFUSED])
@pytest.mark.parametrize("command", ["plan", "run"])
def test_tpcc_options_are_refused_by_plan_as_by_run(tmp_path, keys, message, command):
    (tmp_path / "bad.toml").write_text(TPCC % keys)
    args = ["--results", "out"] if command == "run" else []
    result = oltplab(command, "bad.toml", *args, cwd=tmp_path)
    assert_one_line_error(result, f"bad.toml: workloads[0] (tpcc): {message}")
    assert result.stdout == "" and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("keys", "where"),
    [
        (TPCC % ", rates = [5, 5]", "workloads[0].rates"),
        (ENGINE + "[protocol]\nrates = [5, 5]\n", "protocol.rates"),
    ],
    ids=["workload", "protocol"],
)
def test_a_rate_given_twice_is_refused(tmp_path, keys, where):
    assert_run_refuses(
        tmp_path, keys, f"{where}: each rate may be given once (5 is given more than once)"
    )


# --- L-1: a workload's name that is no string -------------------------------------------------


@pytest.mark.parametrize("name", ["[]", "{}", "[1, 2]"])
def test_a_workload_name_that_is_no_string_is_bad_input(tmp_path, name):
    spec = ENGINE + f"[[workloads]]\nname = {name}\n"
    assert_run_refuses(tmp_path, spec, "workloads[0].name: expected a string in quotes")
