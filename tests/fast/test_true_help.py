"""Help and documentation that say only what the code does (issue 47, finding 8)."""

from __future__ import annotations

import re
from pathlib import Path

from oltplab.experiments.until_answered import rounds_order
from oltplab.spec import parse_spec
from tests.support.cli import options_of_every_command

ROOT = Path(__file__).parents[2]


def help_of(command: str, option: str) -> str:
    return next(o.help for o in options_of_every_command()[command] if option in o.opts)


def test_only_the_command_that_draws_flame_graphs_is_said_to() -> None:
    """`report` draws no flame graph; `bisect --explain` draws the differential one."""
    profile = " ".join(help_of("run", "--profile").split())
    assert "`oltplab report` draws" not in profile
    assert "`oltplab bisect --explain`" in profile and "flame graph" in profile


def test_the_precision_search_is_said_to_run_in_the_order_it_runs() -> None:
    spec = parse_spec('workloads = ["oltp_read_only"]\n[[engines]]\nname = "mysql-8.0.31"\n', "t")
    said = " ".join(help_of("run", "--margin").split())
    assert rounds_order(spec) == "sliced"
    assert "sliced and isolated unless the spec names another order" in said
    assert "interleaved, paired rounds" not in said


def test_documents_cite_report_sections_by_a_title_the_report_has() -> None:
    """Section numbers move as sections come and go with the data; titles do not."""
    golden = (ROOT / "tests/data/results-v4/expected/report.md").read_text()
    titles = {re.sub(r"^## \d+\. ", "", line) for line in golden.splitlines() if line[:3] == "## "}
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for page in pages:
        if "_build" in page.parts:
            continue
        text = " ".join(page.read_text().split())
        assert not re.search(r"\b[Ss]ection \d+\b", text), page
        for title in re.findall(r"section \*([^*]+)\*", text):
            assert title in titles, (page, title)
