"""The first-comparison tutorial, run as its reader would run it: every command of its sh
blocks through the real command line on real engines (the demo is the tiny matrix it is),
and what its text blocks show found in what they print."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli import oltplab
from tests.tutorial import pattern, printed, steps

pytestmark = pytest.mark.engine

PAGE = Path(__file__).parents[2] / "docs" / "tutorials" / "first-comparison.md"


def test_the_first_comparison_prints_what_the_tutorial_shows(tmp_path: Path) -> None:
    for step in steps(PAGE):
        output = ""
        for command in step.commands:
            result = oltplab(*command, cwd=tmp_path)
            assert result.returncode == 0, f"oltplab {' '.join(command)}: {result.stderr}"
            output += printed(result.stdout)
        for line in step.shown:
            assert pattern(line).search(output), f"{line!r} not in:\n{output}"
    # Every path of the results the page names is there.
    for path in set(re.findall(r"`(runs/demo[^`\s]*)`", PAGE.read_text())):
        assert (tmp_path / path).exists(), path
