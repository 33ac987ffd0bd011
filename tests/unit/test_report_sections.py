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
from tests.cli import oltplab
from tests.golden import build_tree


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
    assert after.endswith(
        f"## 19. Engines measured\n\n{len(engines)} engines: {', '.join(engines)}; 1 chart(s).\n"
    )
    numbered = [int(n) for n in re.findall(r"^## (\d+)\.", after, flags=re.MULTILINE)]
    assert numbered == sorted(numbered) and numbered[-1] == 19, numbered
