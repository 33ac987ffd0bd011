"""The pieces that keep results safe: the journal, the lock, atomic files, account SQL and
names that cannot carry HTML into a report."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from oltplab.base.errors import DiskFull, ResultsBusy
from oltplab.engines.mariadb import MariadbFamily
from oltplab.engines.mysql import MysqlFamily
from oltplab.report.format import without_html
from oltplab.store.files import (
    MIN_FREE_BYTES,
    ensure_space,
    free_bytes,
    write_atomic,
    write_secret,
)
from oltplab.store.journal import Journal
from oltplab.store.lock import ResultsLock, holder
from tests.support.cli import oltplab
from tests.support.golden import build_tree


def test_a_line_cut_short_by_a_kill_is_skipped_and_the_next_starts_afresh(tmp_path):
    journal = Journal(tmp_path)
    journal.append({"type": "meta", "key": "a", "value": "1"})
    with journal.path.open("ab") as handle:
        handle.write(b'{"type": "meta", "key": "b", "val')  # the kill came here
    journal.append({"type": "meta", "key": "c", "value": "3"})
    read = journal.read()
    assert [r["key"] for r in read.records] == ["a", "c"] and read.torn_lines == 1


def test_the_lock_names_its_holder_and_dies_with_it(tmp_path):
    results = tmp_path / "out"
    holding = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from oltplab.store.lock import ResultsLock\n"
         "with ResultsLock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)",
         str(results)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holding.stdout is not None and holding.stdout.readline().strip() == "held"
        assert holder(results) == holding.pid
        with pytest.raises(ResultsBusy, match=f"oltplab pid {holding.pid} is writing here"), \
                ResultsLock(results):  # fmt: skip
            pass
    finally:
        holding.kill()
        holding.communicate()
    assert holder(results) is None
    with ResultsLock(results):  # taken at once after a kill -9
        assert holder(results) == os.getpid()


def test_a_command_ending_before_it_wrote_results_leaves_no_lock_file(tmp_path):
    """`rebuild` on an empty folder, or on one holding other files (and a lock file a killed
    command left), exits 2 and leaves the folder as it was, without a lock file; a folder
    the lock made for a writer that ended before writing is removed with it."""
    empty = tmp_path / "empty"
    empty.mkdir()
    done = oltplab("rebuild", str(empty), cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("error: "), done.stderr
    assert "no journal.jsonl to rebuild from" in done.stderr
    assert list(empty.iterdir()) == []

    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    (other / ".oltplab.lock").touch()
    done = oltplab("rebuild", str(other), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert [p.name for p in other.iterdir()] == ["notes.txt"]

    fresh = tmp_path / "fresh"
    with pytest.raises(ResultsBusy), ResultsLock(fresh):
        raise ResultsBusy("ended before writing anything")
    assert not fresh.exists()


def test_an_import_that_fails_into_a_folder_of_other_files_leaves_them_as_they_were(tmp_path):
    """An import into an existing folder that fails once it holds the lock (here a folder
    stands where its journal goes) takes back its ledger and lock file, and nothing else:
    the folder and the files already in it stay."""
    source = build_tree(tmp_path / "source")
    out = tmp_path / "out"
    (out / "journal.jsonl").mkdir(parents=True)
    (out / "notes.txt").write_text("mine")
    done = oltplab("import", str(source), "-r", str(out), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f"error: {out / 'journal.jsonl'}: is a folder"), done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["journal.jsonl", "notes.txt"]
    assert (out / "notes.txt").read_text() == "mine"


def test_space_needed_on_one_disk_adds_up_and_the_shortage_names_where(tmp_path):
    """Bytes bound for two folders of one filesystem must fit there together; the stop
    names the folder that needs most."""
    half = free_bytes(tmp_path) // 2 - 2 * MIN_FREE_BYTES
    ensure_space({tmp_path / "results": 0, tmp_path / "work": half}, "restore the datadir")
    with pytest.raises(DiskFull, match=r"work: .* needed to restore the datadir"):
        ensure_space(
            {tmp_path / "results": half, tmp_path / "work": 2 * half}, "restore the datadir"
        )


def test_files_are_replaced_whole_and_secrets_are_private(tmp_path):
    path = tmp_path / "state.json"
    write_atomic(path, "old")
    write_atomic(path, "new")
    assert path.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["state.json"]
    write_secret(tmp_path / "pw", "s3cret")
    assert (tmp_path / "pw").stat().st_mode & 0o777 == 0o600


def test_accounts_sql_drops_the_installers_passwordless_accounts_before_any_login():
    sql = MariadbFamily.accounts_sql((10, 11, 5), "pw", "db's-host")
    assert "DROP USER IF EXISTS 'root'@'127.0.0.1', 'root'@'::1', 'root'@'%'" in sql
    assert "''@'localhost'" in sql and "'root'@'db''s-host'" in sql
    assert "ALTER USER 'root'@'localhost' IDENTIFIED BY 'pw';" in sql
    assert "SET PASSWORD FOR 'root'@'localhost' = PASSWORD('pw')" in MariadbFamily.accounts_sql(
        (10, 1, 48), "pw", "h"
    )
    mysql = MysqlFamily.accounts_sql((8, 0, 31), "pw", "h")
    assert "ALTER USER 'root'@'localhost' IDENTIFIED WITH mysql_native_password BY 'pw';" in mysql
    # MySQL 5.5 has neither DROP USER IF EXISTS nor ALTER USER: the grant tables themselves,
    # one statement a line, as its --init-file reads them.
    old_mysql = MysqlFamily.accounts_sql((5, 5, 9), "pw", "h").splitlines()
    # Nothing of it in the binary log, which would keep the password in the datadir.
    assert sql.startswith("SET sql_log_bin = 0;\n") and old_mysql[0] == "SET sql_log_bin = 0;"
    assert (
        old_mysql[1] == "DELETE FROM mysql.user WHERE NOT (User = 'root' AND Host = 'localhost');"
    )
    assert "SET PASSWORD FOR 'root'@'localhost' = PASSWORD('pw');" in old_mysql
    assert all(line.endswith(";") and "IF EXISTS" not in line for line in old_mysql)


def test_names_carry_no_html_into_the_markdown_but_code_spans_stay_as_they_are():
    line = "| mysql-8<script>alert(1)</script> &lt;b&gt; | `a<b>` & more, r3 -> r4 < r5 |"
    assert without_html(line) == (
        "| mysql-8&lt;script>alert(1)&lt;/script> &amp;lt;b&amp;gt; | `a<b>` & more, r3 -> r4 < r5 |"
    )
    # A folder name that is a link goes nowhere; the report's own charts still show.
    links = (
        "| [x](javascript:alert(1)) | [y]( https://e.vil) | [z](//e.vil) | ![tps](charts/t.png) |"
    )
    assert without_html(links) == (
        "| [x]\\(javascript:alert(1)) | [y]\\( https://e.vil) | [z]\\(//e.vil) | ![tps](charts/t.png) |"
    )


def test_an_imported_folder_name_with_html_is_escaped_in_report_md(tmp_path):
    tree = build_tree(tmp_path / "tree")
    for scenario in ("benchmark_logs", "benchmark_logs_read_only"):
        folder = tree / scenario / "mysql" / "8.0.45"
        folder.rename(folder.with_name("8.0.45<img src=x onerror=alert(1)>"))
    assert oltplab("import", "tree", "-r", "out", cwd=tmp_path).returncode == 0
    done = oltplab("report", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "out" / "report" / "report.md").read_text()
    outside_code = "".join(part for i, part in enumerate(text.split("`")) if i % 2 == 0)
    assert "<img" not in outside_code and "&lt;img src=x onerror=alert(1)>" in text
