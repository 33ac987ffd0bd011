"""Exports to the tools teams run, each read by the tool or checked against its format:
Otava finds the change point `oltplab history` finds; Bencher's metric format validates
against its published schema; OpenMetrics parses with Prometheus's own parser."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from oltplab.analysis.dataset import load
from tests.support.cli import oltplab
from tests.support.otava_tool import otava_command
from tests.support.trees import tree

# Bencher Metric Format as its reference documents it: benchmarks (names up to 1024
# characters) holding measures (slugs or names up to 64), each with a numeric value and
# optional numeric lower and upper values.
BMF_SCHEMA = {
    "type": "object",
    "minProperties": 1,
    "propertyNames": {"maxLength": 1024, "minLength": 1},
    "additionalProperties": {
        "type": "object",
        "propertyNames": {"maxLength": 64, "minLength": 1},
        "additionalProperties": {
            "type": "object",
            "properties": {
                "value": {"type": "number"},
                "lower_value": {"type": "number"},
                "upper_value": {"type": "number"},
            },
            "required": ["value"],
            "additionalProperties": False,
        },
    },
}


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight nightly runs of one engine; at 16 threads it loses 20% from the fifth night."""
    root = tmp_path_factory.mktemp("nights")
    for night in range(1, 9):
        tree(root / f"tree{night}", night, {16: 0.2} if night >= 5 else None)
        done = oltplab("import", f"tree{night}", "-r", f"night{night}", cwd=root)
        assert done.returncode == 0, done.stderr
        # Imported within a second of each other; nightly runs are a day apart.
        with sqlite3.connect(root / f"night{night}" / "ledger.sqlite") as db:
            db.execute("UPDATE runs SET started_at = ?", (f"2026-11-{night:02d}T02:00:00+00:00",))
    return root


def test_otava_finds_the_change_point_history_finds(nights: Path) -> None:
    runs = [f"night{n}" for n in (3, 1, 8, 2, 5, 4, 7, 6)]  # any order: each run says when
    history = oltplab("history", *runs, "--engine", "mysql-8.0.45", cwd=nights)
    assert history.returncode == 0, history.stderr
    found = [line.split("│") for line in history.stdout.splitlines() if "│ night5" in line]
    assert len(found) == 1 and found[0][3].strip() == "16" and "night4" in found[0][4], found
    exported = oltplab("export", *runs, "--format", "otava", "-o", "hist.csv", cwd=nights)
    assert exported.returncode == 0, exported.stderr
    assert "Next: otava analyze --config-file hist.otava.yaml oltplab" in exported.stderr
    _, *rows = (nights / "hist.csv").read_text().splitlines()
    assert [row.split(",")[1] for row in rows] == [f"night{n}" for n in range(1, 9)]
    analysed = subprocess.run(
        [str(otava_command()), "analyze", "--config-file", "hist.otava.yaml", "oltplab",
         "--output", "json"],
        cwd=nights, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    changes = [
        (point["attributes"]["run"], change["metric"])
        for point in json.loads(analysed.stdout)["oltplab"]
        for change in point["changes"]
    ]
    assert ("night5", "mysql-8.0.45/rw-local/2G/16t/tps") in changes, changes
    assert {run for run, _ in changes} == {"night5"}, changes


def test_bencher_json_validates_and_carries_the_report_s_interval(nights: Path) -> None:
    done = oltplab("export", "night1", "-f", "bencher", cwd=nights)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    jsonschema.validate(found, BMF_SCHEMA)
    throughput = found["mysql-8.0.45/rw-local/2G/16t"]["throughput"]
    # the point's steady TPS: the mean of its repetitions' (the summary's rows, one a cell)
    summary = oltplab("export", "night1", "-f", "json", cwd=nights)
    reps = [r["tps"] for r in json.loads(summary.stdout) if r["threads"] == 16]
    assert len(reps) == 5 and abs(throughput["value"] / (sum(reps) / 5) - 1) < 1e-4, throughput
    assert throughput["lower_value"] < throughput["value"] < throughput["upper_value"]


def test_openmetrics_parse_with_prometheus_s_parser(nights: Path) -> None:
    done = oltplab("export", "night2", "-f", "openmetrics", cwd=nights)
    assert done.returncode == 0, done.stderr
    families = list(text_string_to_metric_families(done.stdout))
    tps = next(f for f in families if f.name == "oltplab_tps")
    assert tps.type == "gauge"
    dataset = load([nights / "night2"])
    assert len(tps.samples) == sum(len(v) for v in dataset.series.values()) == 3 * 5 * 30
    assert all(s.timestamp is not None for s in tps.samples)
    refused = oltplab("export", "night1", "night2", "-f", "openmetrics", cwd=nights)
    assert refused.returncode == 2 and "one results directory" in refused.stderr
    no_file = oltplab("export", "night1", "-f", "otava", cwd=nights)
    assert no_file.returncode == 2 and "needs -o FILE.csv" in no_file.stderr


def flagged_copies(nights: Path, to: Path, where: dict[str, str]) -> Path:
    """The eight nights copied to `to`, the cells `where` picks in each night it names
    flagged `interference`, as a busy host leaves them."""
    for night in range(1, 9):
        shutil.copytree(nights / f"night{night}", to / f"night{night}")
    for name, picked in where.items():
        with sqlite3.connect(to / name / "ledger.sqlite") as db:
            db.execute(f"UPDATE cells SET flags = 'interference' WHERE {picked}")
    return to


def analysed(folder: Path, config: str) -> list[tuple[str, str, dict[str, str]]]:
    """Otava's changes in the history `config` reads: (run, metric, the run's attributes),
    from every test it names (one JSON document a line)."""
    done = subprocess.run(
        [str(otava_command()), "analyze", "--config-file", config, "oltplab", "--output", "json"],
        cwd=folder, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return [
        (point["attributes"]["run"], change["metric"], point["attributes"])
        for line in done.stdout.splitlines()
        if line.startswith("{")
        for points in json.loads(line).values()
        for point in points
        for change in point["changes"]
    ]


@pytest.mark.parametrize("format", ["otava", "bencher"])
def test_an_export_of_a_run_every_cell_of_which_is_flagged_exits_2_with_the_reason(
    nights: Path, tmp_path: Path, format: str
) -> None:
    flagged_copies(nights, tmp_path, {"night1": "1 = 1"})
    refused = oltplab("export", "night1", "-f", format, "-o", "out.csv", cwd=tmp_path)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    reason = " ".join(refused.stderr.split())
    assert "nothing to export: all 15 measured cell(s) are flagged (interference 15)" in reason
    assert "--include-flagged" in reason
    assert not (tmp_path / "out.csv").exists()


def test_otava_exports_flagged_cells_with_their_flags(nights: Path, tmp_path: Path) -> None:
    flagged_copies(nights, tmp_path, {"night1": "1 = 1"})
    done = oltplab(
        "export", "night1", "-f", "otava", "--include-flagged", "-o", "h.csv", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    header, row = (tmp_path / "h.csv").read_text().splitlines()
    found = dict(zip(header.split(","), row.split(","), strict=True))
    assert found["mysql-8.0.45/rw-local/2G/16t/flags"] == "interference", found
    assert float(found["mysql-8.0.45/rw-local/2G/16t/tps"]) > 0
    config = yaml.safe_load((tmp_path / "h.otava.yaml").read_text())
    assert "mysql-8.0.45/rw-local/2G/16t/flags" in config["tests"]["oltplab"]["attributes"]
    # Bencher's format has no place for a flag: they are counted on stderr.
    bencher = oltplab("export", "night1", "-f", "bencher", "--include-flagged", cwd=tmp_path)
    assert bencher.returncode == 0, bencher.stderr
    assert len(json.loads(bencher.stdout)) == 3
    told = " ".join(bencher.stderr.split())
    assert "exported 15 flagged cell(s) (interference 15)" in told, told
    # OpenMetrics exports every cell, each series labelled with its cell's flags.
    series = oltplab("export", "night1", "-f", "openmetrics", cwd=tmp_path)
    assert series.returncode == 0, series.stderr
    [tps] = [f for f in text_string_to_metric_families(series.stdout) if f.name == "oltplab_tps"]
    assert {s.labels["flags"] for s in tps.samples} == {"interference"}


def test_an_export_of_results_with_no_measured_cell_exits_2(tmp_path: Path) -> None:
    """One empty output imported: a failed cell, flagged `empty`, and nothing measured."""
    folder = tmp_path / "tree" / "benchmark_logs" / "mysql" / "8.0.45"
    folder.mkdir(parents=True)
    (folder / "Tier2G_RW_4th.sysbench.txt").write_text("")
    assert oltplab("import", "tree", "-r", "empty", cwd=tmp_path).returncode == 0
    for format, reason in [
        ("otava", "no cell is measured"),
        ("bencher", "no cell is measured"),
        ("openmetrics", "no cell of empty has per-second samples"),
    ]:
        refused = oltplab("export", "empty", "-f", format, "-o", f"out.{format}", cwd=tmp_path)
        assert refused.returncode == 2, (format, refused.stdout + refused.stderr)
        assert f"nothing to export: {reason}" in " ".join(refused.stderr.split()), format
        assert not (tmp_path / f"out.{format}").exists()


def test_flagged_cells_left_out_are_counted_on_stderr(nights: Path, tmp_path: Path) -> None:
    flagged_copies(nights, tmp_path, {"night2": "threads = 16"})
    for format in ("otava", "bencher"):
        done = oltplab("export", "night2", "-f", format, "-o", f"out.{format}", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        told = " ".join(done.stderr.split())
        assert "left out 5 flagged cell(s) of 15 measured (interference 5)" in told, told
    bencher = json.loads((tmp_path / "out.bencher").read_text())
    assert "mysql-8.0.45/rw-local/2G/16t" not in bencher and len(bencher) == 2
    # The findings table is the one table that leaves them out; the others show them.
    findings = oltplab("export", "night2", "-t", "findings", cwd=tmp_path)
    assert findings.returncode == 0, findings.stderr
    told = " ".join(findings.stderr.split())
    assert "findings: left out 5 flagged cell(s) of 15 measured (interference 5)" in told, told


def test_otava_reads_a_history_one_run_of_which_lacks_a_point(nights: Path, tmp_path: Path) -> None:
    """night3's 16-thread cells are flagged, so left out: its row has no 16t columns, and
    Otava still finds the drop at night5 in them and the flags when they are exported."""
    flagged_copies(nights, tmp_path, {"night3": "threads = 16"})
    runs = [f"night{n}" for n in range(1, 9)]
    done = oltplab("export", *runs, "-f", "otava", "-o", "h.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    changes = analysed(tmp_path, "h.otava.yaml")
    assert ("night5", "mysql-8.0.45/rw-local/2G/16t/tps") in [c[:2] for c in changes], changes
    assert {run for run, *_ in changes} == {"night5"}, changes
    # The 16-thread point has a file of its own, of the seven nights that measured it.
    assert len((tmp_path / "h-2.csv").read_text().splitlines()) == 1 + 7
    with_flags = oltplab(
        "export", *runs, "-f", "otava", "--include-flagged", "-o", "f.csv", cwd=tmp_path
    )
    assert with_flags.returncode == 0, with_flags.stderr
    rows = list(csv.DictReader((tmp_path / "f.csv").read_text().splitlines()))
    assert [r["mysql-8.0.45/rw-local/2G/16t/flags"] for r in rows] == [
        "interference" if r["run"] == "night3" else "" for r in rows
    ]
    changes = analysed(tmp_path, "f.otava.yaml")
    assert ("night5", "mysql-8.0.45/rw-local/2G/16t/tps") in [c[:2] for c in changes], changes
    # Otava read the flags column as an attribute of each run.
    assert all("mysql-8.0.45/rw-local/2G/16t/flags" in found for *_, found in changes)
