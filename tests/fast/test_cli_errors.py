"""Bad input: one line on stderr naming the file, key or value; exit code 2; no traceback."""

import hashlib
import os
from pathlib import Path

import pytest

from oltplab.plan import build_plan, cells_of
from oltplab.spec import cell_definition_digest, parse_spec
from oltplab.store.ledger import Ledger
from tests.support.cli import assert_one_line_error, oltplab

ENGINE = 'engines = [{name = "mariadb-debian"}]\n'


@pytest.mark.parametrize(
    ("spec", "fragments"),
    [
        (
            'engines = [{name = "mysql-9.9"}]',
            ["bad.toml", "unknown engine 'mysql-9.9'", "mysql-8.0.31"],
        ),
        (ENGINE + "[protocol]\nthreads = = 4\n", ["bad.toml", "not valid TOML", "line 3"]),
        (ENGINE + "[protocol]\nthread = [4]\n", ["bad.toml", "protocol.thread: unknown key"]),
        (
            ENGINE + "[protocol]\nthreads = [0]\n",
            ["bad.toml", "protocol.threads[0]", "from 1 to 10,000"],
        ),
        (ENGINE + "[protocol]\nthreads = [-8]\n", ["protocol.threads[0]", "(got -8)"]),
        (
            ENGINE + '[config]\nbuffer_pool = "100T"\n',
            ["bad.toml", "config.buffer_pool: 100T is larger than this machine's memory"],
        ),
        (
            ENGINE + '[[tiers]]\nname = "big"\nbuffer_pool = "100T"\n',
            ["tiers[0].buffer_pool: 100T"],
        ),
        (
            'engines = [{name = "ps", source = {tarball = "/nowhere/Percona-Server.tar.gz"}}]',
            ["tarball /nowhere/Percona-Server.tar.gz: no such file"],
        ),
        (
            'engines = [{name = "ps", source = {tarball = "bad.toml"}}]',
            ["bad.toml: not a tar archive; give the release's binary tarball"],
        ),
    ],
)
def test_bad_spec(tmp_path, spec, fragments):
    (tmp_path / "bad.toml").write_text(spec)
    result = oltplab("run", "bad.toml", "--results", "out", cwd=tmp_path)
    assert_one_line_error(result, *fragments)
    assert not (tmp_path / "out").exists()


def test_missing_spec_file(tmp_path):
    assert_one_line_error(
        oltplab("run", "nope.toml", "-r", "out", cwd=tmp_path), "nope.toml: no such spec file"
    )


def test_sysbench_not_installed_says_how_to_install_it(tmp_path):
    (tmp_path / "ok.toml").write_text(ENGINE)
    env = {**os.environ, "PATH": str(tmp_path)}
    result = oltplab("run", "ok.toml", "--results", "out", cwd=tmp_path, env=env)
    # A tool the machine lacks is the environment's problem: exit 3.
    assert_one_line_error(result, "sysbench not found", "apt-get install sysbench", code=3)


def test_unknown_engine_to_fetch(tmp_path):
    assert_one_line_error(
        oltplab("engines", "fetch", "oracle-23", cwd=tmp_path), "unknown engine 'oracle-23'"
    )


@pytest.mark.parametrize("command", ["status", "export"])
def test_reading_a_folder_without_results(tmp_path, command):
    (tmp_path / "empty").mkdir()
    assert_one_line_error(oltplab(command, "empty", cwd=tmp_path), "no oltplab results here")
    assert_one_line_error(oltplab(command, "nowhere", cwd=tmp_path), "no such results folder")


@pytest.mark.skipif(not Path("/usr/bin/sysbench").exists(), reason="needs sysbench")
def test_changed_spec_on_existing_results_is_refused_and_the_ledger_is_untouched(tmp_path):
    original = (
        ENGINE
        + "[dataset]\ntables = 1\ntable_size = 1000\n"
        + "[protocol]\nthreads = [1]\nmeasure_seconds = 30\n"
    )
    spec = parse_spec(original, "t")
    ledger = Ledger.open(tmp_path / "out")
    ledger.register(
        (c, cell_definition_digest(spec, c.engine, c.tier, c.workload))
        for c in cells_of(build_plan(spec))
    )
    ledger.close()
    before = hashlib.sha256((tmp_path / "out" / "ledger.sqlite").read_bytes()).hexdigest()
    (tmp_path / "changed.toml").write_text(original.replace("30", "60"))
    result = oltplab("run", "changed.toml", "--results", "out", cwd=tmp_path)
    assert_one_line_error(result, "was measured with a different", "new --results directory")
    after = hashlib.sha256((tmp_path / "out" / "ledger.sqlite").read_bytes()).hexdigest()
    assert before == after
