"""Server options a spec can smuggle (issue 58, H-2 and L-9): a name is judged as the
server reads it (case, `-` and `_`, my_getopt's prefixes, MariaDB's abbreviations), options
that load code or weaken accounts are refused, all when the spec is read, with one line
naming the key and nothing created; a run.json from someone else, and the report, list
every server option a run passes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from oltplab.spec.server_options import read_as, refused_as
from oltplab.store.ledger import Ledger
from tests.support.cli import assert_one_line_error, assert_run_refuses, oltplab
from tests.support.golden import build_tree

ENGINE = 'engines = [{name = "mariadb-debian"}]\n'
REFUSED = "oltplab does not pass options that name files or folders, load code"


# --- H-2: server options read the way the server reads them ---------------------------------

SMUGGLED = [
    # the probe's three: no password asked while the tier runs, a listener elsewhere, a
    # plugin loaded before the check
    ("[config.extra.mariadb]", '"loose-skip-grant-tables" = 1', "grant_tables"),
    ("[config.extra.mariadb]", '"loose-bind-address" = "127.0.0.2"', "bind_address"),
    ("[config.extra.mysql]", '"loose-plugin-load-add" = "x.so"', "plugin_load_add"),
    ("[config.extra.mariadb]", '"enable-bind-address" = "0.0.0.0"', "bind_address"),
    ("[config.extra.mariadb]", '"loose_skip_networking" = 1', "networking"),
    ("[config.extra.mariadb]", '"disable-skip-networking" = 1', "networking"),
    ("[config.extra.mariadb]", '"Loose-Skip-Grant-Tables" = 1', "grant_tables"),
    ("[config.extra.mysql]", '"maximum-bind-address" = "0.0.0.0"', "bind_address"),
    ("[config.extra.mysql]", '"skip-loose-init-file" = "/tmp/x.sql"', "init_file"),
    # X itself, of a negated skip-X
    ("[config.extra.mariadb]", '"grant-tables" = 0', "grant_tables"),
    ("[config.extra.mariadb]", "networking = 0", "networking"),
    # MariaDB's abbreviations (--getopt-prefix-matching, on by default)
    ("[config.extra.mariadb]", '"bind-addr" = "0.0.0.0"', "bind_address"),
    ("[config.extra.mariadb]", '"skip-grant-tab" = 1', "grant_tab"),
    ("[config.extra.mariadb]", "general_log_f = 1", "general_log_file"),
    ("[config.extra.mariadb]", '"getopt-prefix-matching" = 1', "getopt_prefix_matching"),
]


@pytest.mark.parametrize(("table", "line", "read"), SMUGGLED, ids=[s[1] for s in SMUGGLED])
def test_a_server_option_is_refused_however_the_server_would_read_it(tmp_path, table, line, read):
    key = line.split(" = ")[0].strip('"')
    spec = ENGINE + f"{table}\n{line}\n"
    assert_run_refuses(tmp_path, spec, f"{table.strip('[]')}: {key}: {REFUSED}")
    assert refused_as(key) == read


def test_a_tier_s_and_an_engine_s_extra_are_checked_the_same_way(tmp_path):
    tier = (
        ENGINE + '[[tiers]]\nname = "t"\nextra = {mariadb = {"loose-bind-address" = "0.0.0.0"}}\n'
    )
    assert_run_refuses(
        tmp_path, tier, "tiers[0].extra.mariadb: loose-bind-address: ", "bind_address"
    )
    engine = 'engines = [{name = "mariadb-debian", extra = {"loose-skip-grant-tables" = 1}}]\n'
    assert_run_refuses(
        tmp_path, engine, "engines[0].extra: loose-skip-grant-tables: ", "grant_tables"
    )


def test_tunables_stay_allowed_in_any_spelling(tmp_path):
    """What the examples and the docs tune still passes, with the prefixes too, and
    options of their own that begin a refused name (general_log, jit) are not taken for
    abbreviations."""
    allowed = [
        "innodb_buffer_pool_instances", "loose-innodb-adaptive-hash-index", "skip_name_resolve",
        "general_log", "slow_query_log", "thread_handling", "table_open_cache", "sql_mode",
        "performance_schema", "innodb_log_file_size", "enable_seqscan", "jit", "io_method",
        "maximum-max-connections",
    ]  # fmt: skip
    assert [key for key in allowed if refused_as(key) is not None] == []
    (tmp_path / "ok.toml").write_text(
        ENGINE + "[config.extra.mariadb]\n" + "".join(f'"{key}" = 1\n' for key in allowed)
    )
    planned = oltplab("plan", "ok.toml", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr


MARIADBD = shutil.which("mariadbd") or "/usr/sbin/mariadbd"


def _mariadb_options(*args: str) -> dict[str, str]:
    """Each option `mariadbd --help --verbose` lists, with its value after `args`."""
    shown = subprocess.run(
        [MARIADBD, "--no-defaults", *args, "--help", "--verbose"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    ).stdout
    table = shown.split("Variables (--variable-name=value)", 1)[1].split("\n\n", 1)[0]
    rows = [line.split(None, 1) for line in table.splitlines()[2:]]
    return {row[0]: row[1].strip() if len(row) > 1 else "" for row in rows}


@pytest.mark.skipif(not Path(MARIADBD).is_file(), reason="no mariadbd on this machine")
def test_every_abbreviation_mariadb_takes_for_a_refused_option_is_refused():
    """The real server: MariaDB reads `--bind-addr` as --bind-address; every unambiguous
    abbreviation of every option it lists that the check refuses is refused too."""
    assert _mariadb_options("--bind-addr=127.0.0.2")["bind-address"] == "127.0.0.2"
    names = list(_mariadb_options())
    refused = [name for name in names if refused_as(name) is not None]
    assert {"bind-address", "skip-grant-tables", "general-log-file"} <= set(refused)
    missed = [
        name[:end]
        for name in refused
        for end in range(1, len(name))
        if name[:end] not in names
        and [other for other in names if other.startswith(name[:end])] == [name]
        and refused_as(name[:end]) is None
    ]
    assert missed == []


# --- L-9: code loaded, accounts weakened -----------------------------------------------------

LOADS_CODE = [
    ("postgresql", 'jit_provider = "evil"', "jit_provider"),
    ("postgresql", 'password_encryption = "md5"', "password_encryption"),
    ("mariadb", '"old-passwords" = 1', "old_passwords"),
    ("mariadb", '"skip-secure-auth" = 1', "secure_auth"),
    ("mariadb", 'debug = "d:t:o,/tmp/x"', "debug"),
    ("mysql", '"debug-sync" = "now"', "debug_sync"),
    ("mariadb", '"allow-suspicious-udfs" = 1', "allow_suspicious_udfs"),
    ("mariadb", 'wsrep_provider = "/tmp/x.so"', "wsrep_provider"),
    ("mysql", 'admin_address = "0.0.0.0"', "admin_address"),
    ("mariadb", "extra_port = 3307", "extra_port"),
    ("mariadb", 'innodb_tmpdir = "/tmp"', "innodb_tmpdir"),
]


@pytest.mark.parametrize(("family", "line", "read"), LOADS_CODE, ids=[s[1] for s in LOADS_CODE])
def test_options_that_load_code_or_weaken_accounts_are_refused(tmp_path, family, line, read):
    key = line.split(" = ")[0].strip('"')
    spec = ENGINE + f"[config.extra.{family}]\n{line}\n"
    assert_run_refuses(tmp_path, spec, f"config.extra.{family}: {key}: {REFUSED}")
    assert read_as(key) == read


# --- the run.json of someone else, and the report: every server option shown ---------------

EXTRAS = (
    'engines = [{name = "mariadb-debian", extra = {innodb_adaptive_hash_index = 0}}]\n'
    '[config.extra.mariadb]\nthread_handling = "one-thread-per-connection"\n'
    '[[tiers]]\nname = "small"\nextra = {mysql = {table_open_cache = 400}}\n'
)
EXTRA_LINES = [
    'config.extra.mariadb: thread_handling = "one-thread-per-connection"',
    "tier small extra.mysql: table_open_cache = 400",
    "engine mariadb-debian extra: innodb_adaptive_hash_index = 0",
]


def write_run_json(folder: Path, spec: str) -> None:
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"spec": {"text": spec, "base": "/nowhere"}}))


def test_a_rerun_lists_every_server_option_before_it_asks(tmp_path):
    write_run_json(tmp_path / "theirs", EXTRAS)
    result = oltplab("rerun", "theirs", "--results", "mine", cwd=tmp_path)
    assert_one_line_error(result, "rerun theirs: confirm with --yes")
    for line in EXTRA_LINES:
        assert f"  server options from {line}\n" in result.stdout
    assert not (tmp_path / "mine").exists()


def test_a_rerun_json_with_a_smuggled_server_option_is_refused(tmp_path):
    write_run_json(
        tmp_path / "theirs", ENGINE + '[config.extra.mariadb]\n"loose-skip-grant-tables" = 1\n'
    )
    result = oltplab("rerun", "theirs", "--results", "mine", "--yes", cwd=tmp_path)
    assert_one_line_error(
        result,
        "theirs/run.json (spec.text): config.extra.mariadb: loose-skip-grant-tables: ",
        "(the server reads it as grant_tables)",
    )
    assert not (tmp_path / "mine").exists()


def test_the_report_lists_every_server_option_the_spec_added(tmp_path):
    build_tree(tmp_path / "tree")
    assert oltplab("import", "tree", "-r", "res", cwd=tmp_path).returncode == 0
    ledger = Ledger.open(tmp_path / "res")
    ledger.set_meta("spec", EXTRAS)
    ledger.close()
    reported = oltplab("report", "res", cwd=tmp_path)
    assert reported.returncode == 0, reported.stderr
    markdown = (tmp_path / "res" / "report" / "report.md").read_text()
    environment = markdown.split("## 1. ", 1)[1].split("## 2. ", 1)[0]
    for line in EXTRA_LINES:
        assert f"- `{line}`" in environment


def test_a_megabyte_option_name_or_value_is_refused_at_a_readable_length(tmp_path: Path) -> None:
    """Seen in the issue 58 work: a 1 MB key of `[config.extra.mariadb]` went to the server."""
    name = "a" * 1_000_000
    assert_run_refuses(
        tmp_path,
        f'engines = [{{name = "mariadb-10.11.5", extra = {{{name} = 1}}}}]\n',
        "is not an option name (at most 64 letters",
    )
    value = "x" * 5000
    assert_run_refuses(
        tmp_path,
        f'engines = [{{name = "mariadb-10.11.5", extra = {{sql_mode = "{value}"}}}}]\n',
        "sql_mode: a value of at most 4,096 characters",
    )
    said = oltplab("plan", "bad.toml", cwd=tmp_path).stderr
    assert len(said) < 1000, len(said)
