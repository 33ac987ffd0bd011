from dataclasses import replace
from pathlib import Path

import pytest

from oltplab.engines.config import (
    ServerPaths,
    check_variables,
    describe_mismatch,
    expected_variables,
)
from oltplab.engines.control import postgres_status_query
from oltplab.engines.families import intent_settings, option_file
from oltplab.spec import parse_spec
from tests.support.engines import PG_PATHS

G = 1024**3
M = 1024**2


def intent(extra: str = ""):
    spec = parse_spec(
        f'engines = [{{name = "mysql-8.0.31"}}]\n[config]\nredo_capacity = "4G"\n{extra}', "t.toml"
    )
    return spec.resolve(spec.tier_list[0])


def options(family, version, extra=""):
    return {s.option: s.value for s in intent_settings(family, version, intent(extra))}


@pytest.mark.parametrize(
    ("family", "version", "redo"),
    [
        ("mysql", "5.7.44", {"innodb_log_file_size": 2 * G, "innodb_log_files_in_group": 2}),
        (
            "percona-server",
            "5.7.44-48",
            {"innodb_log_file_size": 2 * G, "innodb_log_files_in_group": 2},
        ),
        ("mysql", "8.0.15", {"innodb_log_file_size": 2 * G, "innodb_log_files_in_group": 2}),
        ("mysql", "8.0.29", {"innodb_log_file_size": 2 * G, "innodb_log_files_in_group": 2}),
        ("mysql", "8.0.30", {"innodb_redo_log_capacity": 4 * G}),
        ("percona-server", "8.0.45-36", {"innodb_redo_log_capacity": 4 * G}),
        ("mysql", "8.4.8", {"innodb_redo_log_capacity": 4 * G}),
        ("mysql", "9.6.0", {"innodb_redo_log_capacity": 4 * G}),
        ("mariadb", "10.4.30", {"innodb_log_file_size": 2 * G, "innodb_log_files_in_group": 2}),
        ("mariadb", "10.11.5", {"innodb_log_file_size": 4 * G}),
        ("mariadb", "11.4.5", {"innodb_log_file_size": 4 * G}),
        ("mariadb", "12.1.2", {"innodb_log_file_size": 4 * G}),
    ],
)
def test_the_same_redo_capacity_in_each_versions_own_terms(family, version, redo):
    settings = options(family, version)
    redo_keys = {"innodb_log_file_size", "innodb_log_files_in_group", "innodb_redo_log_capacity"}
    assert {k: v for k, v in settings.items() if k in redo_keys} == redo


@pytest.mark.parametrize(
    ("family", "version", "has_cache"),
    [
        ("mysql", "5.7.22", True),
        ("percona-server", "5.7.44-48", True),
        ("mysql", "8.0.31", False),
        ("mysql", "8.4.8", False),
        ("mariadb", "10.11.5", True),
        ("mariadb", "11.4.5", True),
        ("mariadb", "12.1.2", False),
    ],
)
def test_query_cache_is_disabled_where_it_exists_and_never_written_where_removed(
    family, version, has_cache
):
    settings = options(family, version)
    assert ("query_cache_type" in settings) is has_cache
    assert ("query_cache_size" in settings) is has_cache


def test_buffer_pool_instances_follow_size_and_are_not_written_for_modern_mariadb():
    assert options("mysql", "8.0.31")["innodb_buffer_pool_instances"] == 1
    big = options("mysql", "8.0.31", 'buffer_pool = "12G"')
    assert big["innodb_buffer_pool_size"] == 12 * G and big["innodb_buffer_pool_instances"] == 8
    assert "innodb_buffer_pool_instances" not in options("mariadb", "10.11.5")


def test_mysql_5_5_is_never_given_options_of_5_6_and_later():
    old = options("mysql", "5.5.9")
    for later in (
        "innodb_io_capacity_max",
        "innodb_buffer_pool_dump_at_shutdown",
        "innodb_buffer_pool_load_at_startup",
    ):
        assert later not in old and later in options("mysql", "5.7.22"), later
    assert old["innodb_log_file_size"] == 2 * G and old["query_cache_size"] == 0


def test_binlog_on_and_off():
    on = options("mysql", "8.0.31")
    assert on["log_bin"] == "binlog" and on["sync_binlog"] == 1 and on["binlog_format"] == "ROW"
    assert on["server_id"] == 1
    off = intent_settings("mysql", "8.0.31", intent("binlog = false"))
    assert "skip_log_bin" in {s.option for s in off}
    assert expected_variables(off)["log_bin"] == "OFF"
    assert "sync_binlog" not in {s.option for s in off}


def test_family_extras_apply_only_to_their_family():
    extra = '[config.extra.mariadb]\nthread_handling = "one-thread-per-connection"'
    assert options("mariadb", "10.11.5", extra)["thread_handling"] == "one-thread-per-connection"
    assert "thread_handling" not in options("mysql", "8.0.31", extra)


def test_expected_variables_are_what_show_variables_prints():
    expected = expected_variables(intent_settings("mysql", "8.0.31", intent()))
    assert expected["innodb_buffer_pool_size"] == str(128 * M)
    assert expected["innodb_doublewrite"] == "ON"
    assert expected["log_bin"] == "ON"
    assert expected["innodb_buffer_pool_dump_at_shutdown"] == "OFF"


def test_mismatch_is_reported_with_intended_and_actual_values():
    expected = {
        "innodb_buffer_pool_size": "2147483648",
        "innodb_doublewrite": "ON",
        "innodb_flush_log_at_trx_commit": "1",
    }
    actual = {
        "innodb_buffer_pool_size": "134217728",
        "innodb_doublewrite": "1",
        "innodb_flush_log_at_trx_commit": "1",
    }
    mismatches = check_variables(expected, actual)
    assert len(mismatches) == 1
    assert describe_mismatch(mismatches[0]).startswith(
        "innodb_buffer_pool_size intended 2147483648, actual 134217728"
    )
    missing = check_variables({"no_such_variable": "1"}, actual)
    assert describe_mismatch(missing[0]) == "no_such_variable intended 1, not a server variable"


def test_rendered_option_file_has_paths_and_the_x_plugin_off_only_on_mysql_8():
    paths = ServerPaths(
        Path("/b"),
        Path("/d"),
        Path("/s.sock"),
        4321,
        Path("/p"),
        Path("/e"),
        Path("/t"),
        Path("/f"),
        Path("/b/share"),
    )
    text = option_file(
        "mysql", "8.0.31", "e", "t", paths, intent_settings("mysql", "8.0.31", intent())
    )
    assert text.splitlines()[1] == "[mysqld]"
    assert "port = 4321" in text and "datadir = /d" in text and "mysqlx = OFF" in text
    # File reads and writes (INTO OUTFILE, LOAD DATA) reach only the instance's empty folder.
    assert "secure_file_priv = /f" in text and "user =" not in text
    assert "innodb_redo_log_capacity = 4294967296" in text
    assert "mysqlx" not in option_file("mysql", "5.7.22", "e", "t", paths, [])
    assert "mysqlx" not in option_file("mariadb", "10.11.5", "e", "t", paths, [])


def test_sizes_and_booleans_compare_the_way_the_server_prints_them():
    assert not check_variables(
        {"innodb_log_buffer_size": "64M"}, {"innodb_log_buffer_size": "67108864"}
    )
    assert not check_variables({"skip_name_resolve": "ON"}, {"skip_name_resolve": "1"})
    assert check_variables(
        {"innodb_log_buffer_size": "64M"}, {"innodb_log_buffer_size": "16777216"}
    )


def test_postgresql_gets_the_intent_in_its_own_terms():
    tier = intent('buffer_pool = "256M"\nflush_log_at_trx_commit = 2\ndoublewrite = false\n')
    settings = intent_settings("postgresql", "15.18", tier)
    by_option = {s.option: s for s in settings}
    assert {o: s.value for o, s in by_option.items()} == {
        "shared_buffers": "262144kB",
        "max_wal_size": "4096MB",
        "synchronous_commit": False,
        "full_page_writes": False,
        "max_connections": tier.max_connections,
        "wal_level": "replica",
    }
    # Checked against pg_settings read with its units applied: bytes.
    assert expected_variables(settings)["shared_buffers"] == str(256 * M)
    assert expected_variables(settings)["max_wal_size"] == str(4 * G)
    assert not any(s.option.startswith(("innodb", "query_cache", "sync_binlog")) for s in settings)


def test_postgresql_without_binlog_logs_minimally_and_conf_quotes_strings():
    tier = intent("binlog = false\n[config.extra.postgresql]\nrandom_page_cost = 1.1\n")
    settings = intent_settings("postgresql", "15.18", tier)
    text = option_file("postgresql", "15.18", "pg", "small", PG_PATHS, settings)
    assert "wal_level = 'minimal'\nmax_wal_senders = 0\n" in text
    assert "unix_socket_directories = '/s o'" in text and "port = 5433" in text
    assert text.rstrip().endswith("random_page_cost = 1.1")


@pytest.mark.parametrize(
    ("version", "written"), [("10.23", True), ("13.23", True), ("14.23", False)]
)
def test_postgresql_before_14_is_told_to_store_passwords_for_scram(version, written):
    """Logins are scram; before 14 a role's password would be stored as md5 (the default
    initdb's own postgresql.conf changes, and oltplab's replaces it), and sysbench's login
    refused."""
    text = option_file("postgresql", version, "pg", "small", PG_PATHS, [])
    assert ("password_encryption = 'scram-sha-256'" in text) is written


@pytest.mark.parametrize(
    ("version_num", "reads", "not_read"),
    [
        (100023, ["pg_stat_bgwriter,", "pg_current_wal_lsn(), '0/0'"], ["pg_stat_wal,"]),
        (160004, ["pg_stat_bgwriter,", "pg_stat_wal,"], ["pg_stat_checkpointer", "pg_stat_io"]),
        (170000, ["pg_stat_checkpointer", "pg_stat_io", "pg_stat_wal,"], ["buffers_backend)"]),
        (180004, ["pg_stat_checkpointer", "pg_stat_io", "pg_stat_wal,"], ["checkpoints_timed)"]),
    ],
)
def test_postgresql_status_reads_the_views_each_release_has(version_num, reads, not_read):
    """pg_stat_wal came in 14; 17 moved the checkpointer's counters and the backends' writes
    out of pg_stat_bgwriter. The counters keep one name across releases."""
    query = postgres_status_query(version_num)
    assert all(view in query for view in reads) and not any(v in query for v in not_read)
    for name in ("buffers_checkpoint", "buffers_backend", "checkpoints_timed", "wal_bytes"):
        assert f"'{name}'" in query or f"'pg_stat_wal.{name}'" in query


def test_max_wal_size_holds_two_wal_segments_at_least():
    small = replace(intent(), redo_capacity=8 * M)
    settings = intent_settings("postgresql", "15.18", small)
    assert expected_variables(settings)["max_wal_size"] == str(32 * M)


@pytest.mark.parametrize(
    ("version", "written"),
    [("10.11.5", False), ("10.11.18", True), ("11.4.5", True), ("11.8.3", True), ("12.1.2", True)],
)
def test_mariadb_snapshot_isolation_is_off_wherever_a_release_has_it(version, written):
    """On by default since 11.6.2 (sysbench's read-write then skips transactions on error
    1020): written out, off, so that every release runs the same transactions; a tier's
    [config.extra.mariadb] still turns it on."""
    settings = options("mariadb", version)
    assert ("innodb_snapshot_isolation" in settings) is written
    if written:
        assert settings["innodb_snapshot_isolation"] is False
        extra = '[config.extra.mariadb]\ninnodb_snapshot_isolation = "ON"\n'
        found = [s for s in intent_settings("mariadb", version, intent(extra))
                 if s.option == "innodb_snapshot_isolation"]  # fmt: skip
        assert [s.value for s in found] == [False, "ON"]  # the later line wins
