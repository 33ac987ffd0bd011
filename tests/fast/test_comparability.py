"""Runs not measured alike are named wherever two runs meet (issue 47, finding 1): `gate`
and `reproduced` refuse a verdict unless told to go on, and report, site and history mark
it. The setups differ here as a user's would: one run isolated, the other plain."""

from __future__ import annotations

import json
from pathlib import Path

from oltplab.analysis.comparability import mismatches, traits
from oltplab.spec import parse_spec
from oltplab.store.ledger import Ledger
from tests.support.cli import oltplab
from tests.support.junit_schema import junit_schema
from tests.support.trees import PLAIN, imported, recorded

ISOLATED = PLAIN + "[protocol]\nisolation = true\n"


def test_the_aspects_compared_and_what_differs_in_each() -> None:
    a = traits(
        "a", ISOLATED + '[dataset]\ntables = 8\n[config]\nbuffer_pool = "1G"\n', "1" * 64, None
    )
    b = traits("b", PLAIN + '[dataset]\ntables = 4\n[config]\nbuffer_pool = "1G"\n', "2" * 64, None)
    said = {m.aspect: m.describe() for m in mismatches([a, b])}
    assert set(said) == {"spec", "dataset", "isolation"}, said
    assert said["dataset"] == "dataset: a has dataset.tables=8; b has dataset.tables=4"
    assert said["isolation"] == "isolation: a has on; b has off"
    # An imported tree records none of it: nothing to compare, nothing claimed.
    assert mismatches([a, traits("c", None, None, None)]) == []
    # The isolation a run recorded beats what its spec asked (a search turns it on).
    host = {"host": {"isolation": "server on CPU 1, sysbench on CPU 0", "hostname": "vm"}}
    assert traits("d", PLAIN, None, host).aspects["isolation"] == (
        "server on CPU 1, sysbench on CPU 0",
    )


def test_gate_and_reproduced_refuse_runs_not_measured_alike(tmp_path: Path) -> None:
    base = recorded(tmp_path, "base", 1, ISOLATED)
    plain = recorded(tmp_path, "plain", 2, PLAIN)
    for command in (("gate", base, plain), ("reproduced", base, plain)):
        refused = oltplab(*command, cwd=tmp_path)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: base and plain were not measured")
        assert "isolation: base has on; plain has off" in lines[0]
        assert "pass --allow-mismatch to judge anyway" in lines[0]
    judged = oltplab("gate", base, plain, "--allow-mismatch", cwd=tmp_path)
    assert judged.returncode in (0, 1, 5), judged.stderr
    assert "note: not alike: isolation: base has on; plain has off" in judged.stderr
    gate_md = (tmp_path / plain / "gate.md").read_text()
    assert "Judged with --allow-mismatch; the two were not measured alike:" in gate_md
    assert "`isolation: base has on; plain has off`" in gate_md
    # Measured alike, no word of it.
    again = recorded(tmp_path, "again", 3, ISOLATED)
    alike = oltplab("gate", base, again, cwd=tmp_path)
    assert "not alike" not in alike.stderr and "not measured alike" not in alike.stderr


def test_the_gate_says_in_both_files_what_it_judged_unalike_or_could_not_compare(
    tmp_path: Path,
) -> None:
    # Issue 58 L-4: gate.xml lacked the --allow-mismatch note gate.md has, and a run that
    # recorded no setup was judged without a word in either.
    base = recorded(tmp_path, "base", 1, ISOLATED)
    plain = recorded(tmp_path, "plain", 2, PLAIN)
    judged = oltplab("gate", base, plain, "--allow-mismatch", cwd=tmp_path)
    assert judged.returncode in (0, 1, 5), judged.stderr
    schema = junit_schema()
    xml = (tmp_path / plain / "gate.xml").read_text()
    schema.validate(xml)
    noted = schema.to_dict(xml)["testsuite"][0]["properties"][0]["property"]
    assert {"@name": "not alike", "@value": "isolation: base has on; plain has off"} in noted

    tree = imported(tmp_path, "tree", 3)
    blind = oltplab("gate", base, tree, cwd=tmp_path)
    assert blind.returncode in (0, 1, 5), blind.stderr
    said = "tree recorded no spec, dataset, engine settings, isolation, order, host"
    assert f"note: not compared: {said}" in blind.stderr
    assert "note: not compared: base recorded no host" in blind.stderr  # no run.json
    gate_md = (tmp_path / tree / "gate.md").read_text()
    assert (
        f"Not compared, as not every run recorded it:\n\n- `base recorded no host`\n- `{said}`"
        in (gate_md)
    )
    xml = (tmp_path / tree / "gate.xml").read_text()
    schema.validate(xml)
    noted = schema.to_dict(xml)["testsuite"][0]["properties"][0]["property"]
    assert {"@name": "not compared", "@value": said} in noted


def test_views_side_by_side_mark_runs_not_measured_alike(tmp_path: Path) -> None:
    base = recorded(tmp_path, "base", 1, ISOLATED)
    plain = recorded(tmp_path, "plain", 2, PLAIN)
    third = recorded(tmp_path, "third", 3, PLAIN)
    shown = oltplab("report", base, plain, "-o", "both", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "note: not alike: isolation: base has on; plain has off" in shown.stderr
    markdown = (tmp_path / "both" / "report.md").read_text()
    assert "Not measured alike (a difference between them may be the setup's):" in markdown
    assert "`isolation: base has on; plain has off`" in markdown
    assert "Not measured alike" in (tmp_path / "both" / "report.html").read_text()

    history = oltplab("history", base, plain, third, "--engine", "mysql-8.0.45", cwd=tmp_path)
    assert "isolation: base has on; plain has off; third has off" in (
        " ".join(history.stderr.split())
    )

    site = oltplab("site", base, plain, third, "-o", "site", cwd=tmp_path)
    assert site.returncode == 0, site.stderr
    data = next((tmp_path / "site" / "history").glob("*.js")).read_text()
    unalike = json.loads(data.split("=", 1)[1].strip().rstrip(";"))["unalike"]
    assert unalike[-1] == "isolation: base has on; plain has off; third has off", unalike
    assert unalike[0].startswith("spec: base has digest="), unalike
    index = (tmp_path / "site" / "index.html").read_text()
    assert "measured unlike the newest in" in index and "<td>spec, isolation</td>" in index


def test_a_default_written_out_is_the_same_dataset_and_the_same_spec(tmp_path: Path) -> None:
    """(issue 60) `rand_type = "uniform"` written out is what the default gives: the spec's
    digest is the same, and so is its dataset, so nothing says they were not measured alike."""
    known = 'workloads = ["oltp_read_write"]\n[[engines]]\nname = "mysql-8.0.31"\n'
    bare = known + "[dataset]\ntables = 4\n"
    spelled = known + '[dataset]\ntables = 4\nrand_type = "uniform"\n'
    runs = [traits(name, text, parse_spec(text, name).digest(), None)
            for name, text in (("bare", bare), ("spelled", spelled))]  # fmt: skip
    assert mismatches(runs) == []
    assert runs[0].aspects["dataset"] == ("dataset.tables=4",)
    # A setting that differs still does.
    other = known + '[dataset]\ntables = 4\nrand_type = "pareto"\n'
    found = mismatches([*runs, traits("other", other, parse_spec(other, "o").digest(), None)])
    assert [m.aspect for m in found] == ["spec", "dataset"], found
    # The gate, over two results directories whose ledgers keep the two spellings, judges.
    for name, text, seed in (("bare", bare, 1), ("spelled", spelled, 2)):
        recorded(tmp_path, name, seed, text)
        ledger = Ledger.open(tmp_path / name)
        ledger.set_meta("spec_digest", parse_spec(text, name).digest())
        ledger.close()
    judged = oltplab("gate", "bare", "spelled", cwd=tmp_path)
    assert judged.returncode in (0, 1, 5), judged.stderr
    assert "not alike" not in judged.stderr and "not measured alike" not in judged.stderr
