"""Names in outputs, merge checks and messages (issue 42, third pass): a results folder's
name cannot become a link in Markdown nor a formula in a spreadsheet, merge refuses shards
that do not hold what they say, and each error names the thing that is wrong."""

from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pymysql
import pytest
from markdown_it import MarkdownIt

from oltplab.base.errors import EngineError, OltplabError
from oltplab.distribute.merge import merge
from oltplab.engines.control import said
from oltplab.engines.distribution import Distribution
from oltplab.engines.families import family_of
from oltplab.engines.family import Layout
from oltplab.engines.hosts import Host
from oltplab.engines.launcher import PrivateInstance
from oltplab.plan.blocks import Shard
from oltplab.report import format as markdown_format
from tests.support.cli import assert_one_line_error, oltplab
from tests.support.shards import SPEC, fake_shard
from tests.support.trees import imported, tree

LINK_NAME = "c`[y](http:evil.example)`"
FORMULA_NAME = "=cmd|' -C calc'!A0"
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def links(markdown: str) -> list[str]:
    """Every link a CommonMark reader (with GFM tables) makes of the text."""
    parser = MarkdownIt("commonmark").enable("table")
    found = []
    for token in parser.parse(markdown):
        for child in token.children or []:
            if child.type == "link_open":
                found.append(str(child.attrGet("href")))
    return found


def test_a_folder_name_stays_in_its_code_span_in_the_gate_summary(tmp_path: Path) -> None:
    base = imported(tmp_path, LINK_NAME, 1)
    other = imported(tmp_path, "other", 2)
    done = oltplab("gate", base, other, "--margin", "50%", cwd=tmp_path)
    assert done.returncode in (0, 2), done.stderr
    written = (tmp_path / other / "gate.md").read_text()
    assert done.stdout == written
    assert links(written) == [], written
    spans = [
        child.content
        for token in MarkdownIt("commonmark").parse(written)
        for child in token.children or []
        if child.type == "code_inline"
    ]
    assert LINK_NAME in spans, written


@pytest.mark.parametrize(
    "name", ["`", "a``b", "``", "`x` [y](http:evil.example) `", "a\n\n[y](http:e)", "\\`"]
)
def test_a_code_span_holds_any_name_whole(name: str) -> None:
    shown = markdown_format.code(name)
    rendered = MarkdownIt("commonmark").parseInline(f"x {shown} [y](http:e.example) z")
    kinds = [child.type for child in rendered[0].children or []]
    assert kinds.count("code_inline") == 1 and kinds.count("link_open") == 1
    span = next(c for c in rendered[0].children or [] if c.type == "code_inline")
    assert span.content == name.replace("\n", " ")


@pytest.mark.parametrize(
    "name", [LINK_NAME, "\\`[y](http:evil.example)`", "a``[y](http:e.example)`"]
)
def test_a_report_line_finds_code_spans_where_a_reader_does(name: str) -> None:
    """The report's title names its folders as they are: what is not in a code span for a
    CommonMark reader (a backslash-escaped backtick opens none) has its links escaped."""
    assert links(markdown_format.without_html(f"# oltplab report: {name}, base")) == []


def _cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def _formula_free(rows: list[list[str]]) -> None:
    for row in rows:
        for cell in row:
            if cell.startswith(FORMULA_START):
                float(cell)  # only a number may start with a sign


def test_a_formula_name_is_text_in_every_csv_export(tmp_path: Path) -> None:
    imported(tmp_path, "base", 1)
    tree(tmp_path / "named-tree", 3, {16: 0.2})
    done = oltplab("import", "named-tree", "-r", FORMULA_NAME, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # Both measured on a machine of that name (OLTPLAB_MACHINE), as `oltplab run` records.
    for results in ("base", FORMULA_NAME):
        with closing(sqlite3.connect(tmp_path / results / "ledger.sqlite")) as db, db:
            db.execute("UPDATE runs SET provenance = json_set(provenance, '$.machine', ?)",
                       (FORMULA_NAME,))  # fmt: skip
    exported = oltplab("export", "base", FORMULA_NAME, "-f", "otava", "-o", "h.csv", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    otava = _cells((tmp_path / "h.csv").read_text())
    _formula_free(otava)
    assert [row[1] for row in otava[1:]] == ["base", "'" + FORMULA_NAME]
    summary = oltplab("export", "base", FORMULA_NAME, "--table", "summary", cwd=tmp_path)
    assert summary.returncode == 0, summary.stderr
    rows = _cells(summary.stdout)
    _formula_free(rows)
    assert rows[-1][rows[0].index("machine")] == "'" + FORMULA_NAME
    progression = oltplab("export", "base", FORMULA_NAME, "--table", "progression", cwd=tmp_path)
    rows = _cells(progression.stdout)
    _formula_free(rows)
    # Numbers stay numbers: a fall in TPS is still negative.
    assert any(float(row[rows[0].index("ci_low_pct")]) < 0 for row in rows[1:])
    replayed = oltplab("replay", FORMULA_NAME, "--min-seconds", "10", "-o", ".", cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    _formula_free(_cells((tmp_path / "replay.csv").read_text()))


MERGE_SPEC = SPEC.replace("canary = ", "# canary = ")


@pytest.fixture
def shards(tmp_path: Path) -> tuple[Path, Path]:
    one = fake_shard(tmp_path / "one", MERGE_SPEC, Shard(1, 2), "node-a", 100)
    two = fake_shard(tmp_path / "two", MERGE_SPEC, Shard(2, 2), "node-b", 100)
    return one, two


def _refused(shards: list[Path], output: Path, *said: str) -> None:
    there = output.exists()
    with pytest.raises(OltplabError) as refusal:
        merge(shards, output)
    for fragment in said:
        assert fragment in str(refusal.value), refusal.value
    assert output.exists() == there
    assert not list(output.parent.glob(f".{output.name}.merging-*"))


def test_merge_refuses_a_shard_whose_run_json_names_another_archive(
    tmp_path: Path, shards: tuple[Path, Path]
) -> None:
    one, two = shards
    run_json = two / "run.json"
    record = json.loads(run_json.read_text())
    record["engines"]["mariadb-10.11.5"]["archive_sha256"] = "e5" * 32
    run_json.write_text(json.dumps(record))
    _refused([one, two], tmp_path / "merged", str(run_json), "mariadb-10.11.5", "archive")


def test_merge_refuses_shards_of_engines_from_other_archives(
    tmp_path: Path, shards: tuple[Path, Path]
) -> None:
    """Each shard agreeing with itself, but not with the other: another build of one engine."""
    one, two = shards
    with closing(sqlite3.connect(two / "ledger.sqlite")) as db, db:
        db.execute("UPDATE engines SET archive_sha256 = ?", ("f6" * 32,))
    record = json.loads((two / "run.json").read_text())
    for facts in record["engines"].values():
        facts["archive_sha256"] = "f6" * 32
    (two / "run.json").write_text(json.dumps(record))
    _refused([one, two], tmp_path / "merged", str(two), "archive sha256 f6f6", str(one))


def test_merge_refuses_a_ledger_that_does_not_match_its_raw_files(
    tmp_path: Path, shards: tuple[Path, Path]
) -> None:
    one, two = shards
    with closing(sqlite3.connect(two / "ledger.sqlite")) as db, db:
        db.execute("UPDATE summaries SET tps = tps * 10")
    _refused([one, two], tmp_path / "merged", str(two), "tps", "raw")


@pytest.mark.parametrize("inside", ["two", "two/merged"])
def test_merge_refuses_an_output_inside_a_shard(
    tmp_path: Path, shards: tuple[Path, Path], inside: str
) -> None:
    one, two = shards
    before = sorted(p.name for p in two.iterdir())
    _refused([one, two], tmp_path / inside, "-o", str(two))
    assert sorted(p.name for p in two.iterdir()) == before
    done = oltplab("merge", "one", "two", "-o", inside, cwd=tmp_path)
    assert_one_line_error(done, "inside")


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (["gate", "base", "nosuch"], "nosuch"),
        (["gate", "nosuch", "base"], "nosuch"),
        (["replay", "nosuch"], "nosuch"),
    ],
)
def test_a_missing_results_folder_is_named_as_such(
    tmp_path: Path, arguments: list[str], named: str
) -> None:
    imported(tmp_path, "base", 1)
    done = oltplab(*arguments, cwd=tmp_path)
    assert_one_line_error(done, f"{named}: no such results folder")
    assert "--output" not in done.stderr
    assert not (tmp_path / named).exists()


def test_import_of_a_file_says_a_folder_is_expected(tmp_path: Path) -> None:
    (tmp_path / "run.sysbench.txt").write_text("sysbench 1.0.20\n")
    done = oltplab("import", "run.sysbench.txt", "-r", "out", cwd=tmp_path)
    assert_one_line_error(done, "run.sysbench.txt: is a file", "expected a folder")
    assert not (tmp_path / "out").exists()
    missing = oltplab("import", "nowhere", "-r", "out", cwd=tmp_path)
    assert_one_line_error(missing, "nowhere: no such directory")


@pytest.mark.parametrize(
    ("script", "said"), [("exit 3", "exited with code 3"), ("kill -9 $$", "signal 9")]
)
def test_a_server_that_dies_silently_still_gives_a_reason(
    tmp_path: Path, script: str, said: str
) -> None:
    distribution = Distribution(
        "mysql-x", "mysql", "8.0.31", tmp_path, tmp_path / "mysqld", None, None, "0" * 64, {}
    )
    layout = Layout(tmp_path / "work", family_of(distribution))
    layout.work.mkdir()
    server = PrivateInstance(distribution, layout, "pw", Host())
    server.process = subprocess.Popen(["sh", "-c", script])
    server.process.wait()
    with pytest.raises(EngineError) as silent:
        server._wait_ready(5)
    reason = str(silent.value).partition(":")[2].strip()
    assert said in reason and "nothing" in reason, silent.value
    # What it printed is the reason when its error log holds nothing.
    layout.server_output.write_text("mysqld: can't read dir of '/nowhere'\n")
    server.process = subprocess.Popen(["sh", "-c", script])
    server.process.wait()
    with pytest.raises(EngineError, match="can't read dir of '/nowhere'"):
        server._wait_ready(5)
    # Its logs are in a folder the server owns: a link it put in their place is not followed
    # (one we made ourselves, in a folder of ours, would be).
    if os.geteuid() != 0:
        return
    (tmp_path / "secret").write_text("root's own\n")
    layout.server_output.unlink()
    layout.server_output.symlink_to(tmp_path / "secret")
    server_uid = 3_000_000_001
    os.lchown(layout.server_output, server_uid, server_uid)
    os.chown(layout.server_output.parent, server_uid, server_uid)
    server.process = subprocess.Popen(["sh", "-c", script])
    server.process.wait()
    with pytest.raises(EngineError) as linked:
        server._wait_ready(5)
    assert "root's own" not in str(linked.value) and said in str(linked.value)


def test_a_connection_error_with_an_empty_message_still_says_what_happened() -> None:
    assert said(pymysql.err.OperationalError(1045, "Access denied for user 'sb'")) == (
        "Access denied for user 'sb'"
    )
    assert said(pymysql.err.OperationalError(2013, "")) == "OperationalError 2013, with no message"
    assert said(pymysql.err.InterfaceError()) == "InterfaceError, with no message"
