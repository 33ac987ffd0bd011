"""The results site's index filters its runs by spec, dataset and engine, and draws each
point over the runs (issue 47, finding 10): the data both draw on, embedded from what each
run recorded, on imported trees; tests/fast/test_site_filters.py drives them in
Chromium."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from oltplab.analysis.dataset import load
from oltplab.report.bars import window
from oltplab.report.site_facets import NOT_RECORDED, facets_of
from tests.support.site import EIGHT, FOUR, HOSTILE, built_site
from tests.support.trees import recorded


def _digest(spec: str) -> str:
    return hashlib.sha256(spec.encode()).hexdigest()[:12]


def embedded(index: Path) -> dict[str, Any]:
    found = re.search(r'<script id="site-data" type="application/json">(.*?)</script>',
                      index.read_text(), re.S)  # fmt: skip
    assert found, "the index embeds no data for its filters and charts"
    data: dict[str, Any] = json.loads(found.group(1))
    return data


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_site(tmp_path_factory.mktemp("site"))


def test_the_filters_data_names_each_runs_spec_dataset_and_engines(index: Path) -> None:
    runs = {run["name"]: run for run in embedded(index)["runs"]}
    assert runs["eight"] == {"name": "eight", "spec": f"digest {_digest(EIGHT)}",
                             "dataset": "tables=8", "engines": ["mysql-8.0.45"]}  # fmt: skip
    assert runs["four"]["dataset"] == "tables=4"
    assert runs["four"]["spec"] == f"digest {_digest(FOUR)}"
    assert runs["two"] == {"name": "two", "spec": NOT_RECORDED, "dataset": NOT_RECORDED,
                           "engines": ["mariadb-10.11.5", "mysql-8.0.45"]}  # fmt: skip
    assert runs[HOSTILE]["dataset"] == 'name="</script><img src=x onerror=alert(2)>"'
    # In the order the table lists the runs, each row pointing at its own.
    html = index.read_text()
    rows = re.findall(r'<tr data-run="(\d+)"><td><a href="[^"]*">([^<]*)</a>', html)
    names = [run["name"] for run in embedded(index)["runs"]]
    assert [(int(i), name) for i, name in rows] == list(enumerate(
        ["&lt;img src=x onerror=alert(1)&gt;", "two", "four", "eight"]))  # fmt: skip
    assert names == [HOSTILE, "two", "four", "eight"]
    # The names are text wherever they are written: no tag of theirs is in the page.
    assert "<img" not in html and "</script><img" not in html
    points = embedded(index)["points"]
    assert {p["engine"] for p in points} == {"mariadb-10.11.5", "mysql-8.0.45"}
    assert all(p["runs"] == ["two"] for p in points if p["engine"] == "mariadb-10.11.5")


def test_a_spec_is_named_by_its_file_where_the_run_recorded_it(tmp_path: Path) -> None:
    dataset = load([tmp_path / recorded(tmp_path, "eight", 1, EIGHT)])
    dataset.run_records[dataset.traits[0].run] = {"spec": {"origin": "specs/nightly.toml"}}
    assert facets_of(dataset).spec == f"nightly.toml ({_digest(EIGHT)})"
    dataset.run_records[dataset.traits[0].run] = {"spec": {"origin": "demo spec"}}
    assert facets_of(dataset).spec == f"demo spec ({_digest(EIGHT)})"


def test_the_index_draws_each_point_over_the_runs_and_cuts_a_wild_interval(index: Path) -> None:
    charts = embedded(index)["charts"]
    assert [chart["title"] for chart in charts] == ["rw-local / 2G"]
    lines = {line["name"]: line for line in charts[0]["lines"]}
    assert set(lines) == {f"{e} {n}t" for e in ("mariadb-10.11.5", "mysql-8.0.45")
                          for n in (1, 4, 16)}  # fmt: skip
    sixteen = {row["run"]: row for row in lines["mysql-8.0.45 16t"]["rows"]}
    # Oldest first, every run that measured the point.
    assert list(sixteen) == ["eight", "four", "two", HOSTILE]
    assert all(row["down"] > 0 and row["up"] > 0 for row in sixteen.values())
    # The wild interval ends at the chart's edge, its true end kept to be named there;
    # the others are whole.
    every = [row["tps"] for line in lines.values() for row in line["rows"]]
    top = window(every, from_zero=True)[1]
    wild = sixteen["two"]
    assert wild["high"] is not None and wild["high"] > top
    assert wild["tps"] + wild["up"] == pytest.approx(top, abs=0.02)
    assert all(row["high"] is None for run, row in sixteen.items() if run != "two")
