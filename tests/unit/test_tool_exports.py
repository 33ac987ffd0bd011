"""Exports to the tools teams run, each read by the tool or checked against its format:
Otava finds the change point `oltplab history` finds; Bencher's metric format validates
against its published schema; OpenMetrics parses with Prometheus's own parser."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import jsonschema
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from oltplab.analysis.dataset import load
from tests.cli import oltplab
from tests.otava_tool import otava_command
from tests.unit.test_gate import tree

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
