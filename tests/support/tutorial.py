"""A tutorial page's commands and what it shows they print, read from its fenced blocks:
each ```sh block is commands to run, one a line; a ```text block right after one is what
those commands print, `...` standing for what a machine measures."""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

# The machine's setup: done once by whoever runs the tutorial, and before any test runs.
SETUP = "bash scripts/setup.sh"
_FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
# Rich draws tables with box-drawing characters (or `|` where the encoding has none).
_BOX = re.compile(r"[\u2500-\u257f|]")


@dataclass(frozen=True)
class Step:
    commands: list[list[str]]  # each an oltplab command's arguments, without `oltplab`
    shown: list[str]  # the lines of the text block after them, if any


def steps(page: Path) -> list[Step]:
    found: list[Step] = []
    for language, body in _FENCE.findall(page.read_text()):
        if language == "sh":
            found.append(Step(_commands(body), []))
        elif language == "text" and found and not found[-1].shown:
            found[-1].shown.extend(line for line in body.splitlines() if line.strip())
    return found


def _commands(block: str) -> list[list[str]]:
    commands = []
    for line in block.splitlines():
        for part in line.split("&&"):
            words = shlex.split(part, comments=True)
            if not words or " ".join(words) == SETUP:
                continue
            assert words[0] == "oltplab", f"not an oltplab command: {part.strip()!r}"
            commands.append(words[1:])
    return commands


def pattern(shown: str) -> re.Pattern[str]:
    """A shown line as a pattern over what was printed: its words in order, whitespace
    (a line break too) between them; `...` is one word of any value, and a word ending in
    `...` is that word's beginning."""
    parts = []
    for word in shown.split():
        if word == "...":
            parts.append(r"\S+")
        elif word.endswith("..."):
            parts.append(re.escape(word[:-3]) + r"\S*")
        else:
            parts.append(re.escape(word))
    return re.compile(r"\s+".join(parts))


def printed(text: str) -> str:
    """What a command printed, its tables' lines taken out."""
    return _BOX.sub(" ", text)


FIRST_TUTORIAL = Path(__file__).parents[2] / "docs" / "tutorials" / "first-comparison.md"


@dataclass(frozen=True)
class TutorialRun:
    folder: Path  # where its commands ran: the demo's results are in runs/demo
    done: list[tuple[Step, list[subprocess.CompletedProcess[str]]]]
