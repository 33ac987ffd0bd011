"""The HTML report in a real headless Chromium (Debian's), driven by Playwright."""

import os
from pathlib import Path
from typing import Any

import pytest

from oltplab.analysis.dataset import load
from oltplab.analysis.model import AnalysisOptions, analyse
from oltplab.importers.ingest import import_tree
from oltplab.importers.scan import scan_tree
from oltplab.report import build
from oltplab.store.ledger import Ledger
from tests.support.browser import CHROMIUM, requests_beyond_files
from tests.support.golden import build_tree

# CI installs Chromium (scripts/setup.sh); only a developer machine without it may skip.
pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists() and not os.environ.get("CI"), reason="needs Debian's chromium"
)
HOSTILE = "<img src=x onerror=alert(1)>"  # a results directory name that must stay text


@pytest.fixture(scope="module")
def page_url(tmp_path_factory):
    root = tmp_path_factory.mktemp("html")
    tree = build_tree(root / "tree")
    for name in ("plain", HOSTILE):
        ledger = Ledger.open(root / name)
        import_tree(scan_tree(tree), ledger)
        ledger.close()
    only_one = build(analyse(load([root / "plain"]), AnalysisOptions()), root / "report")
    both = build(
        analyse(load([root / "plain", root / HOSTILE]), AnalysisOptions()), root / "report2"
    )
    return only_one.html.as_uri(), both.html.as_uri()


def traces(page) -> dict[str, list]:
    return page.evaluate(
        "() => Object.fromEntries(document.getElementById('chart').data.map(t => [t.name, t.y]))"
    )


def opened_report(tmp_path: Path, browser_page: Any) -> Any:
    """The report page of the tree under tmp_path/tree, imported, open with its chart drawn:
    the page and its console errors."""
    ledger = Ledger.open(tmp_path / "res")
    import_tree(scan_tree(tmp_path / "tree"), ledger)
    ledger.close()
    built = build(analyse(load([tmp_path / "res"]), AnalysisOptions()), tmp_path / "report")
    page, errors = browser_page
    page.goto(built.html.as_uri())
    page.wait_for_selector("#chart .main-svg")
    return page, errors


def test_page_renders_and_every_control_changes_the_chart(page_url, browser_page):
    page, errors = browser_page
    page.goto(page_url[0])
    page.wait_for_selector("#chart .main-svg")
    assert page.locator("#chart .scatterlayer .trace").count() == 6  # 3 engines x 2 tiers
    assert traces(page)["mysql-8.0.45 8G"] == [190, 620]
    # TPS carries its 95% interval as error bars; the thread counts measured label the axis.
    bars = page.evaluate(
        "document.getElementById('chart').data.find(t => t.name === 'mysql-8.0.45 8G').error_y"
    )
    assert bars["visible"] and len(bars["array"]) == len(bars["arrayminus"]) == 2
    layout = page.evaluate("document.getElementById('chart').layout.xaxis")
    assert layout["ticktext"] == ["1", "4"] and layout["tickangle"] == 0

    page.locator("#engines input[value='mysql-5.7.44']").uncheck()
    assert page.locator("#chart .scatterlayer .trace").count() == 4
    assert "engine=mysql-5.7.44" not in page.url

    page.select_option("#metric", "qps")
    assert page.locator("#chart .ytitle").text_content() == "QPS (whole run)"
    assert traces(page)["mysql-8.0.45 8G"] == [3800, 12400]

    page.locator("#normalise").check()
    assert page.locator("#chart .ytitle").text_content() == "QPS (whole run) / mariadb-10.11.16"
    assert traces(page)["mariadb-10.11.16 8G"] == [1, 1]
    assert traces(page)["mysql-8.0.45 8G"] == [0.76, 1.55]

    page.select_option("#xaxis", "tier")
    assert page.evaluate("document.getElementById('chart').layout.xaxis.type") == "category"
    assert set(traces(page)) == {
        "mariadb-10.11.16 1t",
        "mariadb-10.11.16 4t",
        "mysql-8.0.45 1t",
        "mysql-8.0.45 4t",
    }
    page.select_option("#xaxis", "threads")

    page.locator("#tiers input[value='2G']").uncheck()
    assert set(traces(page)) == {"mariadb-10.11.16 8G", "mysql-8.0.45 8G"}

    page.select_option("#scenario", "ro-local")
    assert set(traces(page)) == {"mariadb-10.11.16 8G", "mysql-8.0.45 8G"}

    shared = page.url
    page.goto("about:blank")
    page.goto(shared)
    page.wait_for_selector("#chart .main-svg")
    assert page.input_value("#metric") == "qps"
    assert page.is_checked("#normalise")
    assert page.input_value("#scenario") == "ro-local"
    assert not page.is_checked("#engines input[value='mysql-5.7.44']")
    assert errors == []


def test_clicking_a_point_shows_its_timeline(page_url, browser_page):
    page, errors = browser_page
    page.goto(page_url[0] + "#scenario=rw-local&engine=mysql-8.0.45&tier=8G&metric=tps")
    page.wait_for_selector("#chart .main-svg")
    point = page.locator("#chart .scatterlayer .trace .points path").last.bounding_box()
    page.mouse.click(point["x"] + point["width"] / 2, point["y"] + point["height"] / 2)
    page.wait_for_selector("#timeline .scatterlayer .trace", state="attached")
    title = page.locator("#timeline-title").text_content()
    assert "mysql-8.0.45 rw-local 8G 4 threads, run 1" in title
    assert "run 2" in title  # both repetitions of the point
    lines = page.evaluate("document.getElementById('timeline').data.map(t => t.y.length)")
    assert lines == [30, 30]
    assert errors == []


def test_names_from_files_stay_text(page_url, browser_page):
    page, errors = browser_page
    page.goto(page_url[1])
    page.wait_for_selector("#chart .main-svg")
    label = f"mysql-8.0.45@{HOSTILE}"
    assert page.locator("#engines label", has_text=label).count() == 1
    # The only images are the sections' charts, files beside the page.
    sources = page.eval_on_selector_all("img", "found => found.map(i => i.getAttribute('src'))")
    assert sources and all(s.startswith("charts/") and s.endswith(".png") for s in sources)
    legend = page.locator("#chart .legendtext").all_text_contents()
    assert f"{label} 8G" in legend
    assert errors == []


def test_the_page_needs_no_network(page_url, browser_page):
    page, errors = browser_page
    requested = requests_beyond_files(page)
    page.goto(page_url[0])
    page.wait_for_selector("#chart .main-svg")
    assert page.locator("#chart .scatterlayer .trace").count() == 6
    assert requested == []
    assert errors == []


def test_where_it_changed_is_on_the_page_with_a_chart_by_release(page_url, browser_page):
    page, errors = browser_page
    page.goto(page_url[0])
    section = page.locator("#changes-section")
    section.wait_for()
    assert section.is_visible()
    assert "mysql: 2 releases; a change point needs at least 3" in section.inner_text()
    page.wait_for_selector("#releases .main-svg")
    # mysql rw-local at tier 2G: a line per thread count, a point per release.
    xs = page.evaluate("document.getElementById('releases').data.map(t => t.x)")
    assert xs == [["mysql-5.7.44", "mysql-8.0.45"]] * 2
    assert errors == []


def test_one_thread_count_is_drawn_with_the_engines_along_the_x_axis(tmp_path, browser_page):
    """Three releases at one thread count: one point per engine along the x axis, with its
    interval, not three points stacked at threads = 1."""
    from tests.support.synthetic import sysbench_text

    for version, tps in (("5.7.44", 300.0), ("8.0.45", 320.0), ("8.4.3", 310.0)):
        folder = tmp_path / "tree" / "benchmark_logs" / "mysql" / version
        folder.mkdir(parents=True)
        for rep in (1, 2, 3):
            text = sysbench_text([tps + rep] * 30, 1)
            (folder / f"Tier2G_RW_1th_run{rep}.sysbench.txt").write_text(text)
    page, errors = opened_report(tmp_path, browser_page)
    drawn = page.evaluate(
        "document.getElementById('chart').data.map(t => ({name: t.name, x: t.x, y: t.y}))"
    )
    assert [t["x"] for t in drawn] == [["mysql-5.7.44", "mysql-8.0.45", "mysql-8.4.3"]], drawn
    assert drawn[0]["name"] == "2G 1t" and drawn[0]["y"] == [302.0, 322.0, 312.0], drawn
    axis = page.evaluate("document.getElementById('chart').layout.xaxis.title.text")
    assert axis == "engine (1 thread)"
    assert errors == []


def test_a_wild_interval_is_cut_at_the_edge_and_the_points_keep_the_axis(tmp_path, browser_page):
    """Points at 500-2,000 TPS and three repetitions of one cell far apart: its interval
    reaches past 200,000, and the axis still ends near 4,000, a triangle at the cut."""
    from tests.support.synthetic import sysbench_text

    for version, by_threads in (("8.0.45", (500, 1900)), ("8.4.3", (550, None))):
        folder = tmp_path / "tree" / "benchmark_logs" / "mysql" / version
        folder.mkdir(parents=True)
        for threads, level in zip((1, 8), by_threads, strict=True):
            for rep, wild in zip((1, 2, 3), (200, 200, 5600), strict=True):
                tps = level or wild
                text = sysbench_text([tps + (s % 3) for s in range(30)], threads)
                (folder / f"Tier8G_RW_{threads}th_run{rep}.sysbench.txt").write_text(text)
    page, errors = opened_report(tmp_path, browser_page)
    top = page.evaluate("document.getElementById('chart').layout.yaxis.range[1]")
    assert 3000 < top < 5000, top
    marks = page.evaluate(
        "document.getElementById('chart').data.filter(t => t.name === 'interval beyond the chart')"
    )
    assert len(marks) == 1 and marks[0]["x"] == [8] and "goes on to" in marks[0]["text"][0]
    assert errors == []
