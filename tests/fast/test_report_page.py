"""report.html says what report.md says, both open on the same summary, and charts keep
their axes on the points however wide one interval is."""

from __future__ import annotations

import html
import random
import re
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from oltplab.analysis.dataset import load
from oltplab.analysis.model import AnalysisOptions, analyse
from oltplab.importers.ingest import import_tree
from oltplab.importers.scan import scan_tree
from oltplab.report import bars, build, charts
from oltplab.store.ledger import Ledger
from tests.support.synthetic import sysbench_text

# Two engines, three repetitions of 30 s at 1 and 4 threads; one cell counted errors
# (flagged) and one printed nothing (failed).
LEVELS = {"8.0.45": {1: 500.0, 4: 1500.0}, "8.4.3": {1: 550.0, 4: 1650.0}}


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[str, str]:
    root = tmp_path_factory.mktemp("page")
    noise = random.Random(3)
    for version, by_threads in LEVELS.items():
        folder = root / "tree" / "benchmark_logs" / "mysql" / version
        folder.mkdir(parents=True)
        for threads, tps in by_threads.items():
            for rep in (1, 2, 3):
                series = [tps * (1 + noise.gauss(0, 0.02)) for _ in range(30)]
                errors = 5.0 if (version, threads, rep) == ("8.4.3", 4, 2) else 0.0
                text = sysbench_text(series, threads, errors_per_s=errors)
                (folder / f"Tier8G_RW_{threads}th_run{rep}.sysbench.txt").write_text(text)
    (root / "tree" / "benchmark_logs" / "mysql" / "8.0.45" / "Tier8G_RW_8th.sysbench.txt").touch()
    ledger = Ledger.open(root / "res")
    import_tree(scan_tree(root / "tree"), ledger)
    ledger.close()
    built = build(analyse(load([root / "res"]), AnalysisOptions()), root / "report")
    return built.markdown.read_text(), built.html.read_text()


def text_of(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()


def test_the_page_has_every_section_of_the_markdown(report: tuple[str, str]) -> None:
    markdown, page = report
    titles = re.findall(r"^## (.+)$", markdown, flags=re.MULTILINE)
    assert "Flagged and failed cells" in " ".join(titles)
    assert [text_of(t) for t in re.findall(r"<h2>(.*?)</h2>", page)] == titles
    # Every table of the Markdown is a table of the page, row for row.
    sections = page[page.index('<section id="sections">') :]
    assert sections.count("<table>") == len(re.findall(r"^\|---", markdown, flags=re.MULTILINE))
    assert sections.count("<tr>") == len(re.findall(r"^\| (?!-)", markdown, flags=re.MULTILINE))
    assert "| mysql-8.4.3 | 8G | 4 | 2 |" in markdown  # the flagged cell, on both
    assert "<td>mysql-8.4.3</td>\n<td>8G</td>\n<td>4</td>\n<td>2</td>" in sections


def test_both_open_on_the_same_summary(report: tuple[str, str]) -> None:
    markdown, page = report
    first = markdown.split("\n## ")[1]
    assert first.startswith("Summary\n")
    assert "Compared: 2 engines (mysql-8.0.45, mysql-8.4.3) on rw-local; tier 8G;" in first
    cells = "Cells: 12 measured, 1 failed, 1 flagged (1 left out of the key findings as in doubt)"
    assert f"{cells}; see Flagged and failed cells." in first
    headline = re.search(r"^- rw-local, tier 8G, 4 threads: vs mysql-8.4.3 (.+)$", first, re.M)
    assert headline and re.search(r"-\d+\.\d% \[-\d+\.\d, -?\+?\d+\.\d\]", headline.group(1))
    assert f"Next: `oltplab status {markdown.splitlines()[0].split(': ')[1]}`" in first
    assert len(first.splitlines()) < 25  # one screen
    summary = page[page.index('<section id="summary">') : page.index("</section>")]
    assert page.index('<section id="summary">') < page.index('id="chart"')
    said = [text_of(line) for line in first.splitlines()[1:] if line.strip()]
    shown = text_of(summary)
    for line in said:
        assert line.lstrip("- ").replace("`", "") in shown


def test_an_interval_far_beyond_the_points_is_cut_at_the_edge_and_marked() -> None:
    # Points at 500-2,000 TPS, one interval reaching 19,000.
    drawn = bars.kept([(500, 10, 10), (1200, 40, 40), (2000, 300, 17000)], from_zero=True)
    assert bars.window([500, 1200, 2000], from_zero=True) == (0.0, 4000.0)
    assert drawn[:2] == [bars.Bar(500, 10, 10), bars.Bar(1200, 40, 40)]
    assert drawn[2] == bars.Bar(2000, 300, 2000, cut_low=False, cut_high=True)


def test_a_ratio_interval_is_cut_both_ways_on_an_axis_not_from_zero() -> None:
    assert bars.window([0.9, 1.1]) == pytest.approx((0.7, 1.3))
    drawn = bars.kept([(0.9, 0.05, 0.05), (1.1, 0.8, 3.0)])
    assert drawn[0] == bars.Bar(0.9, 0.05, 0.05)
    assert drawn[1].cut_low and drawn[1].cut_high
    assert drawn[1].point - drawn[1].down == pytest.approx(0.7)
    assert drawn[1].point + drawn[1].up == pytest.approx(1.3)


def test_the_relative_chart_keeps_its_axis_on_its_points(tmp_path: Path) -> None:
    points = {"a": [(1, 1.0, 0.0, 0.0), (4, 1.0, 0.0, 0.0)],
              "b": [(1, 1.1, 0.02, 0.02), (4, 1.2, 0.3, 40.0)]}  # fmt: skip
    chart = charts.Chart(tmp_path / "r.png", "relative", "Relative", ([1, 4], "a", points),
                         legend=(("a", "C0"), ("b", "C1")))  # fmt: skip
    figure = Figure()
    charts.DRAW["relative"](figure, chart)
    low, high = figure.axes[0].get_ylim()
    assert high < 2 and low > 0.5  # not stretched to 41.2
    marks = [line for line in figure.axes[0].lines if line.get_marker() == "^"]
    assert len(marks) == 1 and marks[0].get_ydata()[0] == pytest.approx(1.4)
    assert any("beyond the chart" in t.get_text() for t in figure.axes[0].texts)
