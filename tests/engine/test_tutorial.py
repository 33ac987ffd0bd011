"""The first-comparison tutorial, run as its reader would run it: every command of its sh
blocks through the real command line on real engines (the demo is the tiny matrix it is),
and what its text blocks show found in what they print."""

from __future__ import annotations

import re

from tests.support.tutorial import FIRST_TUTORIAL, TutorialRun, pattern, printed


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
