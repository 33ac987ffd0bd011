from pathlib import Path

import pytest

from oltplab.base.errors import SpecError
from oltplab.spec import cell_definition_digest, load_spec, parse_spec

ROOT = Path(__file__).parent.parent.parent
ENGINE = 'engines = [{name = "mysql-8.0.31"}]\n'
# cell_definition_digest of the default workload at threads [1, 2], as computed before
# workloads could be mixes or scripts.
OLD_DIGEST = "b4e3de706bb1754faedca0cf988b68463321e26528055cf83585514298838ccb"


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "examples").glob("*.toml")))
def test_shipped_examples_are_valid(name):
    spec = load_spec(ROOT / "examples" / name)
    assert spec.engines and spec.workloads


def test_full_2026_matrix_is_what_the_report_ran():
    spec = load_spec(ROOT / "examples" / "percona-2026.toml")
    assert [t.name for t in spec.tier_list] == ["2G", "12G", "32G"]
    assert spec.protocol.threads == [1, 4, 16, 32, 64, 128, 256, 512]
    assert (spec.protocol.warmup_ro_seconds, spec.protocol.warmup_rw_seconds) == (180, 600)
    assert spec.protocol.measure_seconds == 900
    assert (spec.dataset.tables, spec.dataset.table_size) == (20, 5_000_000)


def test_tier_overrides_config_which_overrides_defaults():
    spec = parse_spec(
        ENGINE + '[config]\nbuffer_pool = "1G"\nio_capacity = 100\nio_capacity_max = 200\n'
        "[config.extra.mysql]\ntable_open_cache = 1\n"
        '[[tiers]]\nname = "small"\n[[tiers]]\nname = "big"\nbuffer_pool = "2G"\n'
        "[tiers.extra.mysql]\nsort_buffer_size = 2\n",
        "t.toml",
    )
    small, big = (spec.resolve(t) for t in spec.tier_list)
    assert small.buffer_pool == 1024**3 and big.buffer_pool == 2 * 1024**3
    assert small.io_capacity == 100 and small.flush_log_at_trx_commit == 1
    assert small.extra == {"mysql": {"table_open_cache": 1}}
    assert big.extra == {"mysql": {"table_open_cache": 1, "sort_buffer_size": 2}}


def test_default_tier_is_named_after_the_buffer_pool_and_max_connections_fit_the_threads():
    spec = parse_spec(ENGINE + "[protocol]\nthreads = [1, 300]\n", "t.toml")
    assert [t.name for t in spec.tier_list] == ["128M"]
    assert spec.resolve(spec.tier_list[0]).max_connections == 332


def test_workloads_are_tests_mixes_or_scripts_with_their_own_distribution(tmp_path):
    (tmp_path / "mine.lua").write_text("-- a script\n")
    spec = load_spec_text(
        tmp_path,
        ENGINE + 'workloads = ["oltp_read_write", "oltp_point_select", "write-intensive",'
        ' {read_percent = 90}, {test = "oltp_read_write", rand_type = "pareto",'
        ' rand_pareto_h = 0.3}, {script = "mine.lua", read_only = true,'
        " options = {point_selects = 3}}]\n",
    )
    by_name = {w.name: w for w in spec.workloads}
    assert list(by_name) == [
        "oltp_read_write",
        "oltp_point_select",
        "write-intensive",
        "mix-90-10",
        "oltp_read_write-pareto",
        "mine",
    ]
    assert by_name["write-intensive"].run_options() == {"read-percent": 20, "write-percent": 80}
    assert by_name["oltp_point_select"].reads_only and not by_name["oltp_read_write"].reads_only
    assert by_name["mine"].script == tmp_path / "mine.lua" and by_name["mine"].reads_only
    assert by_name["oltp_read_write-pareto"].rand_pareto_h == 0.3


def load_spec_text(folder: Path, text: str):
    (folder / "s.toml").write_text(text)
    return load_spec(folder / "s.toml")


def test_a_plain_workload_keeps_the_definition_digest_it_had():
    # Digest of this cell before workloads could be mixes or scripts (results stay resumable).
    spec = parse_spec(ENGINE + "[protocol]\nthreads = [1, 2]\n", "t.toml")
    assert cell_definition_digest(spec, "mysql-8.0.31", "128M", "oltp_read_write") == (OLD_DIGEST)


def test_cell_definition_changes_with_what_the_numbers_depend_on():
    base = parse_spec(ENGINE + "[protocol]\nthreads = [1, 2]\n", "t.toml")
    longer = parse_spec(ENGINE + "[protocol]\nthreads = [1, 2]\nmeasure_seconds = 60\n", "t.toml")
    more_threads = parse_spec(ENGINE + "[protocol]\nthreads = [1, 2, 3]\n", "t.toml")
    args = ("mysql-8.0.31", "128M", "oltp_read_write")
    assert cell_definition_digest(base, *args) != cell_definition_digest(longer, *args)
    assert cell_definition_digest(base, *args) == cell_definition_digest(more_threads, *args)


def test_an_engine_without_telemetry_is_measured_differently_and_unset_changes_nothing():
    base = parse_spec(ENGINE + "[protocol]\nthreads = [1, 2]\n", "t.toml")
    quiet = parse_spec(
        'engines = [{name = "mysql-8.0.31", telemetry = false}]\n[protocol]\nthreads = [1, 2]\n',
        "t.toml",
    )
    args = ("mysql-8.0.31", "128M", "oltp_read_write")
    assert cell_definition_digest(quiet, *args) != OLD_DIGEST
    assert quiet.digest() != base.digest()
    assert cell_definition_digest(base, *args) == OLD_DIGEST


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('engines = [{name = "mysql-9.9"}]', "engines[0]: unknown engine 'mysql-9.9'"),
        (
            'engines = [{name = "mysql-8.0.31", telemetry = "yes"}]',
            "engines[0].telemetry: expected true or false (got 'yes')",
        ),
        (ENGINE + "[protocol\n", "t.toml: not valid TOML: "),
        (ENGINE + "colour = 1", "colour: unknown key"),
        (ENGINE + "[protocol]\nthreds = [1]", "protocol.threds: unknown key"),
        (
            ENGINE + "[protocol]\nthreads = [1, 0]",
            "protocol.threads[1]: expected a whole number of threads from 1 to 10,000 (got 0)",
        ),
        (
            ENGINE + "[protocol]\nthreads = [-4]",
            "protocol.threads[0]: expected a whole number of threads from 1 to 10,000 (got -4)",
        ),
        (ENGINE + "[protocol]\nthreads = []", "protocol.threads: List should have at least 1 item"),
        (
            ENGINE + '[config]\nbuffer_pool = "lots"',
            "config.buffer_pool: expected a size such as 128M or 2G, got 'lots'",
        ),
        (
            ENGINE + '[protocol]\norder = "sideways"',
            "protocol.order: Input should be 'as-listed', 'interleaved', 'alternating', 'sliced' or 'random'",
        ),
        (
            'engines = [{name = "x", source = {ftp = "y"}}]',
            "engines[0].source: expected exactly one of the keys",
        ),
        (
            ENGINE + 'workloads = ["oltp_nonsense"]',
            "workloads[0]: workload 'oltp_nonsense': not a sysbench test (oltp_read_write",
        ),
        (
            ENGINE + '[[workloads]]\nname = "oltp_read_only"\noptions = {threads = 4}',
            "option 'threads' is set by oltplab",
        ),
        (
            ENGINE + "[config]\nio_capacity = 900\nio_capacity_max = 100",
            "io_capacity_max (100) must be at least io_capacity (900)",
        ),
        (
            'engines = [{name = "mysql-8.0.31"}, {name = "mysql-8.0.31"}]',
            "engines: duplicate name 'mysql-8.0.31'",
        ),
        (
            ENGINE + 'workloads = ["balanced", {name = "balanced", read_percent = 40}]',
            "workloads: duplicate name 'balanced'",
        ),
        (
            ENGINE + "workloads = [{read_percent = 70, write_percent = 20}]",
            "read_percent and write_percent must add up to 100 (got 70 and 20)",
        ),
        (
            ENGINE + "workloads = [{read_percent = 120}]",
            "workloads[0].read_percent: Input should be less than or equal to 100 (got 120)",
        ),
        (
            ENGINE + 'workloads = [{test = "oltp_read_write", script = "x.lua"}]',
            "give only one of test or script",
        ),
        (
            ENGINE + 'workloads = [{test = "oltp_insert", read_only = true}]',
            "read_only is only for scripts",
        ),
        (
            ENGINE + 'workloads = [{test = "oltp_read_write", options = {rand_type = "pareto"}}]',
            "option 'rand_type': set it as the workload's rand_type key",
        ),
        (
            ENGINE + 'workloads = [{test = "oltp_read_write", options = {table_size = 5}}]',
            "option 'table_size' is set by oltplab and cannot be overridden",
        ),
        (
            ENGINE + 'workloads = [{test = "oltp_read_write", rand_type = "lognormal"}]',
            "workloads[0].rand_type: Input should be 'uniform', 'gaussian'",
        ),
    ],
)
def test_bad_specs_give_one_line_naming_file_key_and_expectation(text, message):
    with pytest.raises(SpecError) as raised:
        parse_spec(text, "t.toml")
    error = str(raised.value)
    assert message in error
    assert error.startswith("t.toml: ")
    assert "\n" not in error


def test_malformed_toml_names_the_line():
    with pytest.raises(SpecError, match=r"at line 3"):
        parse_spec(ENGINE + "[protocol]\nthreads = = [1]\n", "t.toml")


def test_hosts_and_placements_are_checked_in_one_line(tmp_path):
    base = 'engines = [{name = "mysql-8.0.31"}]\n'
    good = parse_spec(
        base
        + '[[hosts]]\nname = "db1"\nssh = "bench@db1.example"\nidentity_file = "k"\n'
        + '[[placements]]\nserver = "local"\n[[placements]]\nserver = "db1"\n'
        + "[network]\ndelay_ms = 2\n",
        "s.toml",
        tmp_path,
    )
    assert [p.network for p in good.placements] == [False, True]
    assert good.hosts[0].identity_file == tmp_path / "k"
    assert good.network.shaped
    cases = {
        '[[placements]]\nserver = "db2"\n': "placements[0].server: unknown host 'db2'",
        '[[hosts]]\nname = "local"\nssh = "x@y"\n': '"local" is this machine',
        '[[placements]]\nserver = "local"\nclient = "db1"\n': "placements[0].client: Input should be 'local'",
        "[network]\nloss_pct = 120\n": "network.loss_pct",
        '[[hosts]]\nname = "a"\nssh = "x@y"\nworkdir = "relative"\n': "hosts[0].workdir",
    }
    for text, expected in cases.items():
        with pytest.raises(SpecError) as caught:
            parse_spec(base + text, "s.toml", tmp_path)
        message = str(caught.value)
        assert expected in message, message
        assert "\n" not in message
