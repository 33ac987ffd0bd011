"""Bad input, as a hostile but fair user gives it: each gets exactly one line on stderr
naming the file, key or value and what is expected, exit 2, no traceback, and nothing is
created or changed."""

from __future__ import annotations

import json
import os

import pytest

from oltplab.store.ledger import Ledger
from tests.support.cli import assert_one_line_error, oltplab
from tests.support.golden import build_tree

ENGINE = 'engines = [{name = "mariadb-debian"}]\n'
HOST = '[[hosts]]\nname = "db1"\nssh = "root@10.0.0.2"\n'

SPECS = [
    (
        ENGINE + "[protocol]\nthreads = [100000]\n",
        "protocol.threads[0]: expected a whole number of threads from 1 to 10,000 (got 100000)",
    ),
    (
        ENGINE + "[protocol]\nthreads = [1, 0]\n",
        "protocol.threads[1]: expected a whole number of threads from 1 to 10,000 (got 0)",
    ),
    (
        ENGINE + "[protocol]\nwarmup_threads = 20000\n",
        "protocol.warmup_threads: expected a whole number of threads from 1 to 10,000",
    ),
    (
        ENGINE + "[protocol]\nmeasure_seconds = 1e9\n",
        "protocol.measure_seconds: expected a whole number of seconds from 1 to 604,800 (got 1000000000.0)",
    ),
    (
        ENGINE + "[protocol]\nmeasure_seconds = 2.5\n",
        "protocol.measure_seconds: expected a whole number of seconds from 1 to 604,800 (got 2.5)",
    ),
    (
        ENGINE + "[protocol]\nwarmup_rw_seconds = 700000\n",
        "protocol.warmup_rw_seconds: expected a whole number of seconds (0 skips it) from 0 to 604,800",
    ),
    (
        ENGINE + "[protocol]\nrepetitions = true\n",
        "protocol.repetitions: expected a whole number of repetitions from 1 to 1,000 (got True)",
    ),
    (
        ENGINE + "[dataset]\ntable_size = true\n",
        "dataset.table_size: expected a whole number of rows from 1 to 100,000,000,000 (got True)",
    ),
    (
        ENGINE + '[dataset]\ntables = "20"\n',
        "dataset.tables: expected a whole number of tables from 1 to 100,000 (got '20')",
    ),
    (
        ENGINE + "[dataset]\nwarehouses = 0\n",
        "dataset.warehouses: expected a whole number of warehouses from 1 to 100,000 (got 0)",
    ),
    (
        ENGINE + "[dataset]\nwarehouses = -3\n",
        "dataset.warehouses: expected a whole number of warehouses from 1 to 100,000 (got -3)",
    ),
    (
        ENGINE + "[dataset]\nwarehouses = 2.5\n",
        "dataset.warehouses: expected a whole number of warehouses from 1 to 100,000 (got 2.5)",
    ),
    (
        ENGINE + 'workloads = [{kind = "tpcc", mix = {new_order = 50, payment = 40}}]\n',
        "workloads[0]: workload 'tpcc': mix must add up to 100 percent (got 90: new_order = 50, "
        "payment = 40)",
    ),
    (ENGINE + '[config]\nbinlog = "yes"\n', "config.binlog: expected true or false (got 'yes')"),
    (ENGINE + "[config]\ndoublewrite = 1\n", "config.doublewrite: expected true or false (got 1)"),
    (
        ENGINE + "[config]\nbuffer_pool = 1.5\n",
        "config.buffer_pool: expected a size such as 128M or 2G",
    ),
    (
        ENGINE + HOST + "options = {ProxyCommand = \"sh -c 'touch /tmp/owned'\"}\n",
        "hosts[0].options: ssh option ProxyCommand is not allowed",
    ),
    (
        ENGINE + HOST + 'options = {LocalCommand = "id"}\n',
        "hosts[0].options: ssh option LocalCommand is not allowed",
    ),
    (
        ENGINE + HOST + 'options = {PKCS11Provider = "/tmp/evil.so"}\n',
        "hosts[0].options: ssh option PKCS11Provider is not allowed",
    ),
    (
        ENGINE + HOST + 'options = {User = "x\\nProxyCommand y"}\n',
        "hosts[0].options: must be one line without control characters",
    ),
    (
        ENGINE + '[config.extra.mariadb]\ngeneral_log_file = "/etc/cron.d/x"\n',
        "config.extra.mariadb: general_log_file: oltplab does not pass options that name files",
    ),
    (
        ENGINE + '[config.extra.mariadb]\nplugin_load_add = "evil.so"\n',
        "config.extra.mariadb: plugin_load_add: oltplab does not pass options that name files",
    ),
    (
        ENGINE + "[config.extra.mariadb]\nskip_grant_tables = true\n",
        "config.extra.mariadb: skip_grant_tables: oltplab does not pass options",
    ),
    (
        ENGINE + '[config.extra.postgresql]\narchive_command = "sh -c id"\n',
        "config.extra.postgresql: archive_command: oltplab does not pass options",
    ),
    (
        ENGINE + '[config.extra.mariadb]\nsql_mode = "A\\n[client]"\n',
        "config.extra.mariadb: sql_mode: the value must be one line without '[' or control characters",
    ),
    (
        'engines = [{name = "mariadb-debian", extra = {init_file = "/tmp/x.sql"}}]\n',
        "engines[0].extra: init_file: oltplab does not pass options",
    ),
    (
        'engines = [{name = "x", source = {debian = "-oAPT::Update::Pre-Invoke::=id"}}]\n',
        "engines[0].source.debian: has characters not allowed here",
    ),
    (
        'engines = [{name = "x", source = {endpoint = "db:3306", user = "u", password_env = "A;B"}}]\n',
        "engines[0].source.password_env: has characters not allowed here",
    ),
    (
        'workloads = [{test = "oltp_read_write", options = {skip_trx = "on\\noff"}}]\n' + ENGINE,
        "workloads[0].options: must be one line without control characters",
    ),
    (
        'workloads = [{test = "oltp_read_write", options = {config_file = "/tmp/x"}}]\n' + ENGINE,
        "workloads[0].options: option 'config_file' is set by oltplab",
    ),
]


@pytest.mark.parametrize(
    ("spec", "message"), SPECS, ids=[m.split(":")[0] + f"-{i}" for i, (_, m) in enumerate(SPECS)]
)
def test_a_bad_spec_gets_one_line_and_creates_nothing(tmp_path, spec, message):
    (tmp_path / "bad.toml").write_text(spec)
    result = oltplab("run", "bad.toml", "--results", "out", cwd=tmp_path)
    assert_one_line_error(result, f"bad.toml: {message}")
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "owned").exists()


def test_paths_that_are_files_or_missing_folders(tmp_path):
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "ok.toml").write_text(ENGINE)
    assert_one_line_error(
        oltplab("run", "ok.toml", "-r", "a-file", cwd=tmp_path),
        "a-file: is a file; --results needs a folder",
    )
    assert_one_line_error(
        oltplab("import", "a-file", "-r", "out", cwd=tmp_path),
        "a-file: is a file; expected a folder of sysbench outputs",
    )
    assert_one_line_error(
        oltplab("status", "a-file", cwd=tmp_path), "a-file: no oltplab results here"
    )
    assert (tmp_path / "a-file").read_text() == "x"


def test_a_work_dir_or_snapshots_folder_that_is_a_file_is_refused_before_the_run(tmp_path):
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "ok.toml").write_text(ENGINE)
    for option in ("--work-dir", "--snapshots"):
        for given in ("a-file", "a-file/below"):
            assert_one_line_error(
                oltplab("run", "ok.toml", "-r", "out", option, given, cwd=tmp_path),
                f"{option} {given}: a-file is a file; give a folder",
            )
    assert not (tmp_path / "out").exists()
    assert (tmp_path / "a-file").read_text() == "x"


def test_history_refuses_fewer_directories_than_a_change_point_needs(tmp_path):
    assert_one_line_error(
        oltplab("history", "night1", "night2", "--engine", "mysql-8.0.31", cwd=tmp_path),
        "history: 2 results directories given; a change point needs at least 3",
    )


def test_history_takes_each_directory_once_and_notes_different_specs(tmp_path):
    assert_one_line_error(
        oltplab(
            "history", "night1", "night2", str(tmp_path / "night1"), "--engine", "x", cwd=tmp_path
        ),
        "night1 given twice (also as night1); each results directory is one point",
    )
    build_tree(tmp_path / "tree")
    for night in ("night1", "night2", "night3"):
        assert oltplab("import", "tree", "-r", night, cwd=tmp_path).returncode == 0
        ledger = Ledger.open(tmp_path / night)
        ledger.set_meta("spec_digest", night * 8)
        ledger.close()
    said = oltplab(
        "history", "night1", "night2", "night3", "--engine", "mysql-8.0.45", cwd=tmp_path
    )
    assert said.returncode == 0, said.stderr
    assert "note: not alike: spec: night1 has digest=night1night1; night2 has" in (
        said.stderr.replace("\n", "")
    )


def test_output_paths_are_checked_before_anything_is_written(tmp_path):
    (tmp_path / "a-file").write_text("x")
    build_tree(tmp_path / "tree")
    assert oltplab("import", "tree", "-r", "out", cwd=tmp_path).returncode == 0
    assert_one_line_error(
        oltplab("export", "out", "-o", "a-file/x.csv", cwd=tmp_path),
        "--output a-file/x.csv: a-file is a file; give a path in a folder",
    )
    assert_one_line_error(
        oltplab("export", "out", "-o", "out", cwd=tmp_path),
        "--output out: is a folder; give a file name",
    )
    assert_one_line_error(
        oltplab("report", "out", "-o", "a-file", cwd=tmp_path),
        "--output a-file: is a file; the report needs a folder",
    )
    assert (tmp_path / "a-file").read_text() == "x"
    assert not (tmp_path / "nosuchdir").exists()


def test_importing_an_empty_folder_leaves_nothing_behind(tmp_path):
    (tmp_path / "empty").mkdir()
    assert_one_line_error(
        oltplab("import", "empty", "-r", "out", cwd=tmp_path),
        "empty: nothing imported: no sysbench outputs here",
    )
    assert not (tmp_path / "out").exists()


def write_run_json(folder, spec: str) -> None:
    folder.mkdir()
    record = {"spec": {"text": spec, "base": "/nowhere"}}
    (folder / "run.json").write_text(json.dumps(record))


def test_a_rerun_asks_before_it_runs_what_someone_else_wrote(tmp_path):
    spec = 'engines = [{name = "mine", source = {tarball = "/opt/engine.tar.gz"}}]\n'
    write_run_json(tmp_path / "theirs", spec + HOST + '[[placements]]\nserver = "db1"\n')
    result = oltplab("rerun", "theirs", "--results", "mine", cwd=tmp_path)
    assert_one_line_error(result, "rerun theirs: confirm with --yes")
    assert "engine mine: tarball /opt/engine.tar.gz" in result.stdout
    assert "host db1: ssh root@10.0.0.2, files under /tmp/oltplab" in result.stdout
    assert not (tmp_path / "mine").exists()


def test_a_rerun_json_with_a_proxy_command_is_refused(tmp_path):
    spec = ENGINE + HOST + 'options = {ProxyCommand = "touch /tmp/owned"}\n'
    write_run_json(tmp_path / "theirs", spec)
    result = oltplab("rerun", "theirs", "--results", "mine", "--yes", cwd=tmp_path)
    assert_one_line_error(result, "run.json (spec.text): hosts[0].options: ssh option ProxyCommand")
    assert not (tmp_path / "mine").exists()


def test_random_bytes_named_like_outputs_are_no_cells_and_create_nothing(tmp_path):
    folder = tmp_path / "tree" / "benchmark_logs" / "mysql" / "8.0.45"
    folder.mkdir(parents=True)
    for threads in (1, 4, 16):
        (folder / f"Tier8G_RW_{threads}th.sysbench.txt").write_bytes(os.urandom(20_000))
    result = oltplab("import", "tree", "-r", "out", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "binary content, not a sysbench output" in result.stderr
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith("error: tree: nothing imported: none of the 3 file(s) listed above")
    )
    assert not (tmp_path / "out").exists()


def test_a_fifo_named_like_an_output_is_listed_and_skipped(tmp_path):
    tree = build_tree(tmp_path / "tree")
    os.mkfifo(tree / "benchmark_logs" / "sysbench_run.txt")
    result = oltplab("import", "tree", "-r", "out", cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "sysbench_run.txt: a FIFO, not a regular file; skipped" in result.stderr


def test_a_results_folder_is_never_imported_into_itself(tmp_path):
    build_tree(tmp_path / "tree")
    assert oltplab("import", "tree", "-r", "out", cwd=tmp_path).returncode == 0
    ledger = (tmp_path / "out" / "ledger.sqlite").read_bytes()
    (tmp_path / "out" / "inner").mkdir()
    for source in ("out", "out/inner"):
        assert_one_line_error(
            oltplab("import", source, "-r", "out", cwd=tmp_path),
            "is inside the results folder out it would be imported into",
        )
    assert (tmp_path / "out" / "ledger.sqlite").read_bytes() == ledger
    # A results folder inside the tree it imports is left out of the tree.
    again = oltplab("import", "tree", "-r", "tree/out", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    twice = oltplab("import", "tree", "-r", "tree/out", cwd=tmp_path)
    assert "0 cell(s) imported, 0 updated" in twice.stdout, twice.stdout
    assert "not imported" not in twice.stdout


def test_a_newline_in_a_file_name_is_printed_escaped(tmp_path):
    tree = build_tree(tmp_path / "tree")
    odd = tree / "benchmark_logs" / "mysql" / "8.0.45" / "Tier8G_RW_1th\nrun 2.sysbench.txt"
    odd.write_text("sysbench 1.0.20\n")
    done = oltplab("import", "tree", "-r", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stderr.splitlines() if "Tier8G_RW_1th" in line]
    assert "Tier8G_RW_1th\\nrun 2.sysbench.txt: " in line, done.stderr


TPCC = 'engines = [{name = "mariadb-debian"}]\nworkloads = [{kind = "tpcc"%s}]\n'


def test_a_tpcc_mix_naming_an_unknown_transaction_is_refused_before_the_run(tmp_path):
    (tmp_path / "bad.toml").write_text(TPCC % ", mix = {new_order = 50, refund = 50}")
    result = oltplab("run", "bad.toml", "--results", "out", cwd=tmp_path)
    assert_one_line_error(
        result, "bad.toml: workloads[0] (tpcc): mix.refund: not a transaction type of kind"
    )
    assert not (tmp_path / "out").exists()


def test_warehouses_beyond_the_free_disk_are_refused_with_the_estimate_before_loading(tmp_path):
    (tmp_path / "bad.toml").write_text(TPCC % "" + "[dataset]\nwarehouses = 100000\n")
    result = oltplab("run", "bad.toml", "--results", "out", cwd=tmp_path)
    assert_one_line_error(
        result,
        "bad.toml: [dataset]: TPC-C-like, 100,000 warehouses takes about 14.6 TB in an engine",
        "free. Make the dataset smaller or free space",
    )
    assert not (tmp_path / "out").exists()
