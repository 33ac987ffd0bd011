"""The first-comparison tutorial, run as its reader would run it: every command of its sh
blocks through the real command line on real engines (the demo is the tiny matrix it is),
and what its text blocks show found in what they print."""

from __future__ import annotations

import html
import re
from pathlib import Path

from tests.support.browser import widest_blank
from tests.support.cli import oltplab
from tests.support.tutorial import FIRST_TUTORIAL, TutorialRun, pattern, printed

# A verdict as a run measured to a margin prints it (Answer.describe).
VERDICT = re.compile(r"\): (DIFFERENT|SAME|UNKNOWN) .* after \d+ rounds$")


def test_the_first_comparison_prints_what_the_tutorial_shows(first_tutorial: TutorialRun) -> None:
    for step, results in first_tutorial.done:
        output = ""
        for command, result in zip(step.commands, results, strict=True):
            assert result.returncode == 0, f"oltplab {' '.join(command)}: {result.stderr}"
            output += printed(result.stdout)
        for line in step.shown:
            assert pattern(line).search(output), f"{line!r} not in:\n{output}"
    # Every path of the results the page names is there.
    for path in set(re.findall(r"`(runs/demo[^`\s]*)`", FIRST_TUTORIAL.read_text())):
        assert (first_tutorial.folder / path).exists(), path


def test_the_decisions_report_leads_with_the_verdict_the_demo_printed(
    first_tutorial: TutorialRun, tmp_path: Path
) -> None:
    """The report of the demo's decision opens with the verdicts, estimates and intervals
    the demo printed, word for word, in report.md and report.html; its other figures
    follow, labelled as such."""
    demo = next(
        result
        for step, results in first_tutorial.done
        for command, result in zip(step.commands, results, strict=True)
        if command[0] == "demo"
    )
    said = [line for line in demo.stdout.splitlines() if VERDICT.search(line)]
    assert said, demo.stdout
    decided = first_tutorial.folder / "runs" / "demo-decide"
    done = oltplab("report", str(decided), "-o", str(tmp_path / "report"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    markdown = (tmp_path / "report" / "report.md").read_text()
    summary = markdown.split("\n## Summary\n", 1)[1].split("\n## ", 1)[0]
    listed = [line.removeprefix("- ") for line in summary.splitlines() if line.startswith("- ")]
    assert listed[: len(said)] == said, summary
    page = html.unescape((tmp_path / "report" / "report.html").read_text())
    assert all(line in page for line in said)
    assert page.index(said[-1]) < page.index("Other figures: steady throughput")


def test_a_fresh_walk_of_the_tutorial_reads_cleanly_and_its_page_has_no_blank_screen(
    first_tutorial: TutorialRun, browser_page, tmp_path: Path
) -> None:
    """What the walk printed and wrote: ± throughout (never `+-`), `1 thread` (never
    `1 threads`), and a report.html whose tallest blank band is well under a screen (the
    per-second timeline stays out until a point is clicked). The page's screenshot is
    kept beside the test's files to be looked at."""
    said = [r.stdout + r.stderr for _, results in first_tutorial.done for r in results]
    reports = sorted((first_tutorial.folder / "runs").glob("*/report/report.md"))
    assert reports, "the tutorial writes a report"
    for text in [*said, *(path.read_text() for path in reports)]:
        assert "+-" not in text
        assert not re.search(r"\b1 threads\b", text)
    page, errors = browser_page
    page.goto((first_tutorial.folder / "runs" / "demo" / "report" / "report.html").as_uri())
    page.wait_for_selector("#chart .main-svg")
    widest, at = widest_blank(page)
    screen = page.viewport_size["height"]
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert widest < screen / 3, f"{widest:.0f} px blank from {at:.0f} px: {tmp_path}/report.png"
    assert errors == []
