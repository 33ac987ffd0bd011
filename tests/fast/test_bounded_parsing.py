"""Hostile nesting and damaged caches (issue 58: M-1, L-12, L-1): a spec's TOML is scanned
before it is parsed, so that a key of thousands of dotted parts or arrays nested thousands
deep is one line and exit 2 in little memory (they took 24 GB, or ended in exit 4); the
spec's limit counts bytes; JSON nested too deep is bad JSON; a damaged noise-floor.json is
named, exit 3, and left as it was."""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import pytest

from oltplab.base.nesting import MAX_CONTAINERS, MAX_DEPTH, TooDeep, load_toml
from oltplab.store.ledger import Ledger
from tests.support.cli import oltplab
from tests.support.golden import build_tree

QUICK = Path(__file__).parents[2] / "examples" / "quick.toml"
ENGINE = 'engines = [{name = "mariadb-debian"}]\n'
MIB = 2**20
DEEP = "[" * 5000 + "]" * 5000  # deeper than Python's recursion limit
NESTED = f"arrays and tables nested more than {MAX_DEPTH} deep"
DOTTED = f"a key of more than {MAX_DEPTH} dotted parts"


def one_line_error(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def peak_run(*args: str, cwd: Path) -> tuple[int, str, int]:
    """`python -m oltplab ARGS`: its exit status, output and peak RSS in KiB. Its address
    space is capped at 3 GB and its time at 2 minutes, so that a parse that grows without
    bound fails the test (exit 4, or killed) instead of taking the host's memory."""

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))

    child = subprocess.Popen(
        [sys.executable, "-m", "oltplab", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=capped,
    )
    assert child.stdout is not None
    stopper = threading.Timer(120, child.kill)
    stopper.start()
    with child.stdout:
        said = child.stdout.read()
    # getrusage of that one child as it ends: its own peak, not the test's or another's.
    _, status, usage = os.wait4(child.pid, 0)
    stopper.cancel()
    child.returncode = os.waitstatus_to_exitcode(status)
    return child.returncode, said, usage.ru_maxrss


# The probe's spec of 600 KB, a key of 300,000 parts (24 GB before), and its like nested.
HOSTILE = {
    "dotted key": (ENGINE + ".".join(["a"] * 300_000) + " = 1\n", DOTTED),
    "dotted table": (ENGINE + "[" + ".".join(["a"] * 300_000) + "]\n", DOTTED),
    "nested arrays": (ENGINE + "x = " + "[" * 300_000 + "]" * 300_000 + "\n", NESTED),
    "nested tables": (ENGINE + "x = " + "{a = " * 120_000 + "1" + "}" * 120_000 + "\n", NESTED),
}


@pytest.mark.parametrize("shape", HOSTILE)
def test_a_hostile_spec_is_refused_in_one_line_and_little_memory(tmp_path, shape):
    text, refused = HOSTILE[shape]
    assert 500_000 < len(text.encode()) < MIB
    (tmp_path / "hostile.toml").write_text(text)
    code, said, peak_kib = peak_run("plan", "hostile.toml", cwd=tmp_path)
    assert code == 2, said
    assert said == f"error: hostile.toml: line 2: {refused}, beyond any oltplab reads\n"
    assert peak_kib < 200 * 1024, peak_kib


def test_the_spec_limit_counts_bytes_not_characters(tmp_path):
    """A MiB of two-byte characters is 2 MiB on disk: over the limit, where counting
    characters took it; a spec of exactly a MiB, multi-byte characters and all, is taken."""
    padding = MIB - len(ENGINE) - len("# \n")
    (tmp_path / "wide.toml").write_text(ENGINE + "# " + "é" * padding + "\n", encoding="utf-8")
    line = one_line_error(oltplab("plan", "wide.toml", cwd=tmp_path), 2)
    assert line == "error: wide.toml: over 1,048,576 bytes (1 MiB), the most a spec may be"
    exact = ENGINE + "# " + "é" * (padding // 2) + "x" * (padding % 2) + "\n"
    assert len(exact.encode()) == MIB
    (tmp_path / "exact.toml").write_text(exact, encoding="utf-8")
    planned = oltplab("plan", "exact.toml", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr


@pytest.mark.parametrize(
    "text",
    [
        # Brackets, dots and comment marks in strings and comments are not the TOML's own.
        'a = "[[[[ ... ]" # {{{{ .......\n',
        "a = '[[[[.......'\nb = '''\n[[[[[\n.........'''\n",
        'a = """\n[[[[[ \\""" ......... {{{{{ """\n',
        # Up to two quotes after a multi-line string's end are its own.
        'a = """x""""\nb = "[[[[" # """ [[[[\n',
        "a = '''x'''''\nb = 1.5\n",
        'a = "\\\\" # ["\nb = 2\n',
        "c.extra.mariadb = {x.y.z = [[1, 2], {a = {b = [3]}}]}\n",
    ],
)
def test_brackets_and_dots_in_strings_and_comments_do_not_count(text):
    spec = "".join(f"[t{i}]\n{text}" for i in range(40))
    assert load_toml(spec) == tomllib.loads(spec)


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        ("x = " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), NESTED),
        ('a = "\\\\"\nx = ' + "[" * (MAX_DEPTH + 1), NESTED),  # a string ending in \
        ('a = """x""""\nx = ' + "{a=" * (MAX_DEPTH + 1), NESTED),
        ("a = '''x'''''\n" + ".".join(["a"] * (MAX_DEPTH + 1)) + " = 1", DOTTED),
        ("a = '#'\n" + " . ".join(['"q"'] * (MAX_DEPTH + 1)) + " = 1", DOTTED),
        ("".join(f"k{i} = {{}}\n" for i in range(MAX_CONTAINERS + 1)), f"{MAX_CONTAINERS:,}"),
    ],
)
def test_what_follows_a_string_counts(text, refused):
    with pytest.raises(TooDeep, match=refused):
        load_toml(text)


def test_an_import_map_is_read_as_a_spec_is(tmp_path):
    (tmp_path / "deep.toml").write_text("x = " + DEEP + "\n")
    build_tree(tmp_path / "tree")
    imported = oltplab("import", "tree", "--map", "deep.toml", "-r", "out", cwd=tmp_path)
    line = one_line_error(imported, 2)
    assert line == f"error: deep.toml: line 1: {NESTED}, beyond any oltplab reads"
    assert not (tmp_path / "out").exists()


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """Imported results with a run of this host, whose noise floor a report quotes."""
    build_tree(tmp_path / "tree")
    assert oltplab("import", "tree", "-r", "out", cwd=tmp_path).returncode == 0
    ledger = Ledger.open(tmp_path / "out")
    ledger.begin_run("digest", {"host": {"hostname": platform.node()}})
    ledger.close()
    return tmp_path / "out"


def test_a_stored_spec_nested_too_deep_is_one_the_report_cannot_read(results):
    """It took the report to exit 4; a stored spec that does not parse is shown as none."""
    ledger = Ledger.open(results)
    ledger.set_meta("spec", "x = " + DEEP + "\n")
    ledger.close()
    reported = oltplab("report", "out", cwd=results.parent)
    assert reported.returncode == 0, reported.stderr
    assert (results / "report" / "report.md").is_file()


@pytest.mark.parametrize(
    ("name", "command"), [("capacity.json", "report"), ("distribute.json", "status")]
)
def test_json_nested_too_deep_is_bad_json(results, name, command):
    (results / name).write_text(DEEP)
    line = one_line_error(oltplab(command, "out", cwd=results.parent), 2)
    assert line.startswith(f"error: out/{name}: ") and "nested too deep to read" in line, line


def test_a_journal_line_nested_too_deep_is_a_torn_line(results):
    with (results / "journal.jsonl").open("a") as journal:
        journal.write(DEEP + "\n")
    (results / "ledger.sqlite").unlink()
    rebuilt = oltplab("rebuild", "out", cwd=results.parent)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "1 journal line(s) cut short by a kill were skipped" in rebuilt.stdout


HERE = platform.node()
DAMAGED = {
    "cut short": (b'{"calibrations": [{"host": "vm", ', "Expecting"),
    "nested too deep": (DEEP.encode(), "nested too deep to read"),
    "not an object": (b"[]", "not a JSON object"),
    "a floor that is text": (
        json.dumps({"calibrations": [{"host": HERE, "noise_floor_pct": "4"}]}).encode(),
        "calibrations[0]: noise_floor_pct: not a number",
    ),
    "a spread that is no numbers": (
        json.dumps({HERE: {"noise_floor_pct": 4, "round_spread_pct": {"tps": []}}}).encode(),
        f"{HERE}: round_spread_pct: not an object of numbers",
    ),
    "not UTF-8": (b'{"\xff": 1}', "invalid start byte"),
}


@pytest.mark.parametrize("damage", DAMAGED)
def test_a_damaged_noise_floor_store_is_named_and_kept(results, damage):
    """The store of this host's calibrations, damaged, took every report and plan --margin
    to exit 4 without naming it; now each names it and what to do, exit 3, and leaves it
    as it was for the user to mend or remove. A calibration says so before it measures."""
    content, why = DAMAGED[damage]
    cache = results.parent / "cache"
    cache.mkdir()
    store = cache / "noise-floor.json"
    store.write_bytes(content)
    env = {**os.environ, "OLTPLAB_CACHE": str(cache)}
    commands = (
        ["report", "out"],
        ["plan", str(QUICK), "--margin", "3%"],
        ["calibrate", "mariadb-10.11.5", "--results", "calibrated"],
    )
    for command in commands:
        line = one_line_error(oltplab(*command, cwd=results.parent, env=env, timeout=120), 3)
        assert line.startswith(f"error: {store}: damaged ("), line
        assert why in line, line
        assert line.endswith(
            "it keeps this host's noise floors: mend it, or clear it (`oltplab calibrations "
            "--clear`) and run `oltplab calibrate ENGINE` again"
        ), line
    assert store.read_bytes() == content
    assert not (results / "report").exists()
    assert not (results.parent / "calibrated").exists()
