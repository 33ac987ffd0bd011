"""Every view says only what its data backs: a noisy series of three releases, two
repetitions each, through import, report and every export."""

from __future__ import annotations

import csv
import io
import json
import random
import re
from pathlib import Path

import pytest

from tests.support.cli import oltplab
from tests.support.sections import section
from tests.support.synthetic import sysbench_text

RELEASES = {"5.7.44": 300, "8.0.45": 320, "8.4.3": 310}
# Two repetitions far apart, each second +-40%: a t interval over them would reach below 0.
LEVELS = (0.35, 1.65)
TABLES = ("summary", "progression", "differences", "findings", "changes")


def noisy_tree(root: Path) -> Path:
    rng = random.Random(7)
    for version, base in RELEASES.items():
        folder = root / "benchmark_logs" / "mysql" / version
        folder.mkdir(parents=True)
        for threads in (1, 4):
            for repetition, level in enumerate(LEVELS, start=1):
                tps = [base * threads**0.5 * level * rng.uniform(0.6, 1.4) for _ in range(30)]
                prefix = "" if repetition == 1 else f"run{repetition}_"
                name = f"{prefix}Tier2G_RW_{threads}th.sysbench.txt"
                (folder / name).write_text(sysbench_text(tps, threads))
    return root


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("small")
    noisy_tree(root / "tree")
    done = oltplab("import", "tree", "-r", "res", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    report = oltplab("report", "res", cwd=root)
    assert report.returncode == 0, report.stdout + report.stderr
    for table in TABLES:
        for form in ("csv", "json"):
            exported = oltplab(
                "export", "res", "--table", table, "--format", form,
                "-o", f"{table}.{form}", cwd=root,
            )  # fmt: skip
            assert exported.returncode == 0, exported.stderr
    return root


# A figure followed by its interval: `300 [287, 316]`; a signed one (`+5.9% [...]`) is a
# difference, which may be negative.
INTERVAL = re.compile(r"(?<![+\-\d.,])(\d[\d,.]*) \[(-?[\d,.]+), (-?[\d,.]+)\]")


def page_data(html: str) -> dict:
    found = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    assert found
    return json.loads(found.group(1))


def test_no_throughput_interval_reaches_zero_in_any_view(results: Path) -> None:
    markdown = (results / "res" / "report" / "report.md").read_text()
    for figure, low, _ in INTERVAL.findall(markdown):
        assert float(low.replace(",", "")) > 0, f"{figure} [{low}, ...]"
    data = page_data((results / "res" / "report" / "report.html").read_text())
    lows = [r["tps_low"] for r in data["points"]]
    lows += [low for s in data["releases"]["series"] for low in s["low"]]
    assert all(low is None or low > 0 for low in lows), lows
    rows = list(csv.DictReader(io.StringIO((results / "summary.csv").read_text())))
    rows += json.loads((results / "summary.json").read_text())
    bounds = [r["tps_ci_low"] for r in rows if r["tps_ci_low"] not in ("", None)]
    assert rows and all(float(b) > 0 for b in bounds)
    # Two repetitions give no interval over them at all: the point says why instead.
    assert "300 (too few repetitions: 2; at least 3 needed here)" in markdown
    for form in ("csv", "json"):
        progression = (results / f"progression.{form}").read_text()
        assert "too few repetitions: 2" in progression


def test_findings_say_too_few_repetitions_instead_of_a_leader(results: Path) -> None:
    markdown = (results / "res" / "report" / "report.md").read_text()
    findings = section(markdown, "Key findings")
    assert "| Too few repetitions | rw-local | 2G | all | too few repetitions: 2;" in findings
    for claim in ("Leader", "Saturation point", "within 3%"):
        assert claim not in findings
    exported = json.loads((results / "findings.json").read_text())
    assert [f["kind"] for f in exported] == ["too-few"]


def test_where_it_changed_is_there_without_a_change_point(results: Path) -> None:
    markdown = (results / "res" / "report" / "report.md").read_text()
    changed = section(markdown, "Where it changed")
    sentence = "No change point among the 3 releases of mysql"
    assert sentence in changed
    assert "![releases_mysql_rw-local_2G](charts/releases_mysql_rw-local_2G.png)" in changed
    assert (results / "res" / "report" / "charts" / "releases_mysql_rw-local_2G.png").is_file()
    assert "&lt;" not in markdown  # no HTML entity where Markdown needs none
    releases = page_data((results / "res" / "report" / "report.html").read_text())["releases"]
    assert any(s.startswith(sentence) for s in releases["sentences"])
    assert [s["releases"] for s in releases["series"]] == [
        ["mysql-5.7.44", "mysql-8.0.45", "mysql-8.4.3"]
    ] * 2
    assert json.loads((results / "changes.json").read_text()) == []
