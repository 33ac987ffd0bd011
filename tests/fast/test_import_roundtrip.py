"""Import is a round trip for oltplab's own results (issue 47): a run and the import of its
raw files give the same report. The engines' names and facts, the spec, the machine and
each cell's flags, notes and telemetry come back from the results directory's run.json and
journal; the figures from its raw outputs.

The run is a real one, kept in tests/data/run-w10.tar.xz: `oltplab run` of a TPC-C-like
spec (10 warehouses, 4 threads, 10 s) on MySQL 8.0.31 and PostgreSQL 15 on the project's
machine, with its ledger, journal, run.json, raw outputs and telemetry files. Other load on
the machine flagged both its cells `interference`, which only the journal keeps."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from oltplab.importers.ingest import import_tree
from oltplab.importers.rebuild import rebuild
from oltplab.importers.scan import scan_tree
from oltplab.store.ledger import Ledger
from oltplab.store.outcome import CellOutcome
from oltplab.store.recording import CellRecording
from tests.support.archives import unpacked
from tests.support.cli import oltplab
from tests.support.synthetic import sysbench_text

ENGINES = ("mysql-8.0.31", "postgresql-15")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return unpacked("run-w10.tar.xz", tmp_path_factory, "run")


def report_md(results: Path) -> str:
    """report.md of a results directory, with the directory's path as `<results>`: the only
    thing two reports of the same run may differ in (no date differs: the imported runs
    keep the moments their journal recorded)."""
    out = results.parent / f"{results.name}-report"
    done = oltplab("report", str(results), "-o", str(out), cwd=results.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    return (out / "report.md").read_text().replace(str(results), "<results>")


def test_a_run_and_the_import_of_its_raw_files_give_the_same_report(run: Path) -> None:
    # The ledger is not read: the import has the raw files, run.json and the journal.
    raw = run.parent / "raw"
    shutil.copytree(run, raw, ignore=shutil.ignore_patterns("ledger.sqlite*"))
    done = oltplab("import", "raw", "-r", "again", cwd=run.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not done.stderr.strip(), done.stderr
    assert f"{raw}: an oltplab results directory" in " ".join(done.stdout.split())
    original = report_md(run)
    assert "| mysql-8.0.31 | mysql | 8.0.31 | 8.0.31 | a4105a6ea8126684 |" in original
    assert "| tpcc-local | postgresql-15 | 512M | 4 | 1 | interference |" in original
    assert report_md(run.parent / "again") == original

    # Importing it again changes nothing: no cell, no run.
    again = oltplab("import", "raw", "-r", "again", cwd=run.parent)
    assert "0 cell(s) imported, 0 updated, 2 unchanged" in " ".join(again.stdout.split())
    ledger = Ledger.open(run.parent / "again", create=False)
    try:
        assert [r.started_at for r in ledger.runs()] == ["2026-11-27T23:31:49+00:00"]
    finally:
        ledger.close()


def test_an_engine_keeps_the_name_its_run_gave_it(tmp_path: Path) -> None:
    """A Debian build's folder is named by what SELECT VERSION() said; its run named the
    engine, and run.json says how (the folder alone would make it mariadb-11.8.9-0+deb13u1-from)."""
    folder = "mariadb/11.8.9-MariaDB-0+deb13u1_from_Debian"
    output = tmp_path / "run" / "benchmark_logs" / folder / "Tier128M_RW_4th.sysbench.txt"
    output.parent.mkdir(parents=True)
    output.write_text(sysbench_text([100.0] * 30, 4))
    engine = {
        "family": "mariadb",
        "version": "11.8.9",
        "server_version": "11.8.9-MariaDB-0+deb13u1 from Debian",
        "source": {"debian_suite": "trixie", "package": "mariadb-server"},
        "artifact_dir": folder,
    }
    (tmp_path / "run" / "run.json").write_text(
        json.dumps({"format": 2, "engines": {"mariadb-11.8.9": engine}})
    )
    assert oltplab("import", "run", "-r", "res", cwd=tmp_path).returncode == 0
    exported = oltplab("export", "res", "--format", "json", cwd=tmp_path)
    assert [r["engine"] for r in json.loads(exported.stdout)] == ["mariadb-11.8.9"]
    ledger = Ledger.open(tmp_path / "res", create=False)
    try:
        [(name, row)] = ledger.engines().items()
    finally:
        ledger.close()
    assert (name, row.server_version, json.loads(row.source)) == (
        "mariadb-11.8.9",
        engine["server_version"],
        engine["source"],
    )


def test_a_cell_measured_again_comes_back_with_its_earlier_result_set_aside(
    run: Path, tmp_path: Path
) -> None:
    """The run listed PostgreSQL first and measured MySQL's cell again (as
    --rerun-disturbed does: new files ending in `_again1`, the first result set aside with
    why). The run as its journal and raw files say (`oltplab rebuild`) and the import of
    those files give the same report: the cells in the run's order, not the folders', and
    the earlier result's raw output named by where it is, in the run or in the tree
    imported."""
    tree = tmp_path / "run"
    shutil.copytree(run, tree, ignore=shutil.ignore_patterns("ledger.sqlite*"))
    folder = tree / "benchmark_logs_tpcc" / "mysql" / "8.0.31"
    for path in folder.glob("Tier512M_RW_4th.*"):
        shutil.copy(path, folder / path.name.replace("_4th.", "_4th_again1."))
    key = "mysql-8.0.31|tpcc-local|512M|tpcc|4|1"
    journal = tree / "journal.jsonl"
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    [registered] = [r for r in records if r["type"] == "cells"]
    registered["cells"].reverse()
    [first] = [r for r in records if r["type"] == "result" and r["key"] == key]
    again = {
        **first,
        "artifact": first["artifact"].replace("_4th.", "_4th_again1."),
        "finished_at": "2026-11-27T23:38:30+00:00",
    }
    with journal.open("w") as out:
        for record in (
            *records,
            {"type": "superseded", "key": key, "why": "interference"},
            {"type": "running", "key": key, "run": 1, "started_at": "2026-11-27T23:38:25+00:00"},
            again,
        ):
            out.write(json.dumps(record) + "\n")
    assert oltplab("rebuild", "run", cwd=tmp_path).returncode == 0
    done = oltplab("import", "run", "-r", "again", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    original = report_md(tree)
    assert "| mysql-8.0.31 tpcc-local 512M 4t run 1 | 153 | interference | interference |" in (
        original
    )
    flagged = [f"| tpcc-local | {engine} | 512M | 4 | 1 | interference |" for engine in ENGINES]
    assert original.index(flagged[1]) < original.index(flagged[0])
    assert report_md(tmp_path / "again").replace(f"{tree}/", "") == original


def _times_ten(match: re.Match[str]) -> str:
    return f"{match[1]}{float(match[2]) * 10:.2f}"


def test_a_raw_output_changed_after_the_run_is_refused_as_merge_refuses_it(
    run: Path, tmp_path: Path
) -> None:
    """Issue 58: the run's own results with one cell's TPS in its raw sysbench output made
    ten times what it measured, its ledger as the run left it. The import takes its figures
    from the raw outputs, so it would have taken the false one without a word; it is refused
    in one line naming the file, and the results directory given stays as it was."""
    tree = tmp_path / "run"
    shutil.copytree(run, tree)
    assert oltplab("import", "run", "-r", "kept", cwd=tmp_path).returncode == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "kept").iterdir() if p.is_file()}
    output = "benchmark_logs_tpcc/mysql/8.0.31/Tier512M_RW_4th.sysbench.txt"
    text = (tree / output).read_text()
    tampered = re.sub(r"(tps: )([\d.]+)", _times_ten, text)
    tampered = re.sub(r"(transactions: +\d+ +\()([\d.]+)", _times_ten, tampered)
    assert "(1526.20 per sec.)" in tampered
    (tree / output).write_text(tampered)

    for results in ("fresh", "kept"):
        done = oltplab("import", "run", "-r", results, cwd=tmp_path)
        assert done.returncode == 2, done.stdout + done.stderr
        [said] = done.stderr.strip().splitlines()
        assert "cell mysql-8.0.31 tpcc-local 512M tpcc 4 1: the ledger says 152.62 tps" in said
        assert f"its raw output {output} says 1526.2" in said and "nothing is imported" in said
    assert not (tmp_path / "fresh").exists() or not any((tmp_path / "fresh").iterdir())
    after = {p.name: p.read_bytes() for p in (tmp_path / "kept").iterdir() if p.is_file()}
    assert after == before


def test_rebuild_and_import_read_each_cell_back_as_the_same_outcome(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(issue 61) The ledger takes a cell as one CellOutcome, from the runner, from rebuild
    and from import alike; rebuild (from the journal) and import (from the raw files) of
    the same run read each cell back as the same outcome, the artifact's spelling aside."""
    seen: dict[str, dict[str, CellOutcome]] = {}
    reading = "rebuild"
    finish = CellRecording.finish

    def kept(recording: CellRecording, outcome: CellOutcome) -> None:
        seen.setdefault(reading, {})[recording._cell.key] = outcome
        finish(recording, outcome)

    monkeypatch.setattr(CellRecording, "finish", kept)
    copy = tmp_path / "copy"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("ledger.sqlite*"))
    rebuild(copy)
    reading = "import"
    raw = tmp_path / "raw"
    shutil.copytree(run, raw, ignore=shutil.ignore_patterns("ledger.sqlite*"))
    ledger = Ledger.open(tmp_path / "again")
    try:
        import_tree(scan_tree(raw), ledger)
    finally:
        ledger.close()
    assert seen["rebuild"].keys() == seen["import"].keys() and len(seen["rebuild"]) == 2
    for key, rebuilt in seen["rebuild"].items():
        imported = seen["import"][key]
        assert Path(imported.artifact).name == Path(rebuilt.artifact).name
        for field in fields(CellOutcome):
            if field.name in ("artifact", "samples"):
                continue
            assert getattr(imported, field.name) == getattr(rebuilt, field.name), field.name
        assert len(rebuilt.samples) and np.array_equal(imported.samples, rebuilt.samples)
