"""A report section is one function of the analysis and the charts, and one entry in
report/markdown.py's SECTIONS: a section that exists only here is added as a new one would
be, with `register`, and the report carries it after the built-in ones, which keep their
order."""

from __future__ import annotations

import re
from pathlib import Path

from oltplab.analysis.dataset import load
from oltplab.analysis.model import Analysis, AnalysisOptions, analyse
from oltplab.report import markdown
from tests.support.cli import oltplab
from tests.support.golden import build_tree


def engines_measured(analysis: Analysis, charts: list[Path]) -> list[str]:
    """The test's own section: how many engines the analysis holds, and the charts given."""
    engines = analysis.dataset.engine_names()
    return [
        "## 19. Engines measured",
        "",
        f"{len(engines)} engines: {', '.join(engines)}; {len(charts)} chart(s).",
        "",
    ]


def test_a_registered_section_follows_the_built_in_ones(tmp_path: Path) -> None:
    build_tree(tmp_path / "tree")
    imported = oltplab("import", "tree", "--results", "res", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    analysis = analyse(load([tmp_path / "res"]), AnalysisOptions())
    before = markdown.render(analysis, [])
    markdown.register(engines_measured)
    try:
        after = markdown.render(analysis, [Path("charts/tps.png")])
    finally:
        markdown.SECTIONS.remove(engines_measured)
    engines = analysis.dataset.engine_names()
    assert after.startswith(before)
    # Numbered on from the sections this run has, 1, 2, 3... without a gap.
    numbered = [int(n) for n in re.findall(r"^## (\d+)\.", after, flags=re.MULTILINE)]
    assert numbered == list(range(1, len(numbered) + 1)), numbered
    assert after.endswith(
        f"## {numbered[-1]}. Engines measured\n\n{len(engines)} engines: {', '.join(engines)};"
        " 1 chart(s).\n"
    )


def test_sections_are_numbered_in_order_without_gaps_and_parts_follow_their_section() -> None:
    """A run with latency histograms but no network or machines: 11 was followed by 15."""
    lines = ["# r", "## 1. A", "text: see Flagged and failed cells", "## 11. B", "## 15. C"]
    assert markdown.numbered([*lines, "## 16. D", "## 16a. E", "## 17. F"])[1:] == [
        "## 1. A", "text: see Flagged and failed cells", "## 2. B", "## 3. C", "## 4. D",
        "## 4a. E", "## 5. F",
    ]  # fmt: skip
    # a part whose section is not there is numbered as a section
    assert markdown.numbered([*lines, "## 16a. E"])[-1] == "## 4. E"
