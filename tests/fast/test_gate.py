"""The regression gate on imported trees: a planted slowdown fails it with the point named,
an A/A pair never does, and its JUnit XML is what CI systems read."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import oltplab
from tests.support.junit_schema import junit_schema
from tests.support.trees import imported


def test_a_planted_slowdown_fails_the_gate_and_an_a_a_pair_never_does(tmp_path: Path) -> None:
    base = imported(tmp_path, "base", 1)
    same = imported(tmp_path, "same", 2)
    slow = imported(tmp_path, "slow", 3, {16: 0.2})
    failed = oltplab("gate", base, slow, "--margin", "5%", cwd=tmp_path)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "## oltplab gate: regression" in failed.stdout
    assert "gate: regression (mysql-8.0.45 rw-local 2G 16t)" in failed.stderr
    row = next(line for line in failed.stdout.splitlines() if "16t |" in line)
    assert row.endswith("| regression |"), row
    assert "Next: oltplab report base slow" in " ".join(failed.stderr.split())
    schema = junit_schema()
    xml = (tmp_path / slow / "gate.xml").read_text()
    schema.validate(xml)
    cases = schema.to_dict(xml)["testsuite"][0]["testcase"]
    assert len(cases) == 3 and sum("failure" in case for case in cases) == 1

    aa = oltplab("gate", base, same, "--margin", "5%", cwd=tmp_path)
    assert aa.returncode in (0, 2), aa.stdout + aa.stderr
    schema.validate((tmp_path / same / "gate.xml").read_text())
    # The same slowdown against a tolerance far wider than it: passed.
    (tmp_path / "loose").mkdir()
    loose = oltplab("gate", base, slow, "--margin", "60%", "-o", "loose", cwd=tmp_path)
    assert loose.returncode == 0 and "## oltplab gate: no regression" in loose.stdout


def test_the_gate_refuses_what_it_cannot_judge_in_one_line(tmp_path: Path) -> None:
    base = imported(tmp_path, "base", 1)
    bad = oltplab("gate", base, base, "--margin", "lots", cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "error: --margin lots: expected a percentage above 0 and up to 100, e.g. 3%"
    ]
    missing = oltplab("gate", base, "nowhere", cwd=tmp_path)
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "nowhere").exists()
