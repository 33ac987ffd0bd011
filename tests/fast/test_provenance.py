"""run.json: secrets kept out, what a rerun must warn about, unreadable files refused."""

from __future__ import annotations

import json

import pytest

from oltplab.base.errors import OltplabError
from oltplab.base.hostinfo import disk_of
from oltplab.store.provenance import differences, read_run_json, redact_spec
from tests.support.cli import oltplab


def test_secrets_are_removed_from_the_spec_but_not_where_they_are_kept() -> None:
    text = (
        '[[engines]]\nname = "prod"\n'
        'source = { endpoint = "db:3306", user = "bench", password_env = "DB_PASS" }\n'
        '[config.extra.mysql]\nssl_password = "hunter2"\nkeyring_token="abc"\n'
        'password_file = "/home/me/.pw"\n'
    )
    redacted = redact_spec(text)
    assert "hunter2" not in redacted and "abc" not in redacted
    assert 'ssl_password = "***"' in redacted
    assert 'password_env = "DB_PASS"' in redacted
    assert 'password_file = "/home/me/.pw"' in redacted


def test_differences_name_what_could_move_the_numbers() -> None:
    original = {
        "host": {"kernel": "6.1", "cores": 2, "cpu_governor": "performance"},
        "sysbench": {"version": "1.0.20", "sha256": "a", "scripts": {"x.lua": "1"}},
        "engines": {"m": {"server_version": "8.0.31", "binary_sha256": "b"}},
    }
    same = json.loads(json.dumps(original))
    assert differences(original, same) == []
    changed = json.loads(json.dumps(original))
    changed["host"]["cpu_governor"] = "powersave"
    changed["sysbench"]["scripts"]["x.lua"] = "2"
    changed["engines"]["m"]["binary_sha256"] = "c"
    assert differences(original, changed) == [
        "host cpu_governor: performance -> powersave",
        "sysbench scripts differs",
        "engine m binary_sha256: b -> c",
    ]


def test_unreadable_run_json_is_refused_in_one_line(tmp_path) -> None:
    with pytest.raises(OltplabError, match=r"run\.json: not found; rerun needs"):
        read_run_json(tmp_path)
    (tmp_path / "run.json").write_text("{not json")
    with pytest.raises(OltplabError, match=r"run\.json: \(the file\): Invalid JSON"):
        read_run_json(tmp_path)
    (tmp_path / "run.json").write_text('{"spec": {"text": "x"}}')
    with pytest.raises(OltplabError, match=r"run\.json: spec\.base: Field required"):
        read_run_json(tmp_path)


def test_run_json_formats_older_load_newer_are_refused(tmp_path) -> None:
    spec = {"text": "engines = []", "base": "/x"}
    (tmp_path / "run.json").write_text(json.dumps({"spec": spec}))  # before format existed
    assert read_run_json(tmp_path)["format"] == 1
    (tmp_path / "run.json").write_text(json.dumps({"format": 2, "spec": spec, "mine": 1}))
    assert read_run_json(tmp_path)["mine"] == 1  # keys it does not know are kept
    (tmp_path / "run.json").write_text(json.dumps({"format": 3, "spec": spec}))
    with pytest.raises(
        OltplabError, match=r"run\.json: format: .*format 3; this oltplab reads formats 1, 2"
    ):
        read_run_json(tmp_path)


def test_rerun_without_run_json_fails_cleanly(tmp_path) -> None:
    (tmp_path / "old").mkdir()
    done = oltplab("rerun", "old", "--results", "new", cwd=tmp_path)
    assert done.returncode != 0
    assert "old/run.json: not found" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "new").exists()


def test_disk_of_a_directory(tmp_path) -> None:
    facts = disk_of(tmp_path)
    assert facts["path"] == str(tmp_path.resolve())
    assert facts["mount"] and facts["filesystem"] and facts["size_bytes"] > 0
