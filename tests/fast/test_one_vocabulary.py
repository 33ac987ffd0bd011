"""One behaviour across commands (issue 47, finding 7): one name and one unit for a margin,
the old names still accepted with a note, `-o` making the folders it names in every command,
and the same exit statuses everywhere, with one of its own for "undecided"."""

from __future__ import annotations

from pathlib import Path

import pytest

from oltplab.base.errors import EXIT_UNDECIDED
from oltplab.cli.vocabulary import RENAMED
from tests.support.cli import oltplab, options_of_every_command
from tests.support.trees import imported

OLD_NAMES = {old for renamed in RENAMED.values() for old in renamed}


def test_every_help_names_a_margin_one_way() -> None:
    commands = options_of_every_command()
    named_margin = {}
    for command, options in commands.items():
        for option in options:
            names = set(option.opts) | set(option.secondary_opts)
            assert not names & OLD_NAMES, f"oltplab {command}: {sorted(names & OLD_NAMES)}"
            said = option.help or ""
            if said.startswith("The margin"):
                assert option.opts == ["--margin"] and option.metavar == "PCT", (command, names)
                named_margin[command] = said
            else:
                assert "--margin" not in names, (command, said)
    assert set(named_margin) == {
        "run", "rerun", "reproduced", "export", "report", "replay", "plan", "bisect", "gate",
    }  # fmt: skip
    # Where a command writes to a place it is told, it is told with -o, --output.
    for command, options in commands.items():
        for option in options:
            if "-o" in option.opts or "--output" in option.opts:
                assert sorted(option.opts) == ["--output", "-o"], command


def test_a_margin_is_a_percentage_with_or_without_its_sign(tmp_path: Path) -> None:
    base = imported(tmp_path, "base", 1)
    slow = imported(tmp_path, "slow", 3, {16: 0.2})
    for given in ("5%", "5"):
        gated = oltplab("gate", base, slow, "--margin", given, cwd=tmp_path)
        assert gated.returncode == 1, gated.stderr
    # The margin `reproduced` once took only as a bare number.
    said = oltplab("reproduced", base, slow, "--margin", "5%", cwd=tmp_path)
    assert said.returncode == 1 and "verdict: not reproduced" in said.stdout, said.stderr


@pytest.mark.parametrize(
    ("old", "command"),
    [
        ("--max-regression", ("gate", "base", "slow", "--max-regression", "5%")),
        ("--threshold", ("export", "base", "--table", "differences", "--threshold=20")),
    ],
)
def test_an_old_name_still_works_and_says_its_new_one(
    tmp_path: Path, old: str, command: tuple[str, ...]
) -> None:
    imported(tmp_path, "base", 1)
    imported(tmp_path, "slow", 3, {16: 0.2})
    done = oltplab(*command, cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    note = f"note: {old} is now --margin (the same value); the old name still works"
    assert done.stderr.splitlines()[0] == note, done.stderr


def test_an_undecided_verdict_has_a_status_of_its_own(tmp_path: Path) -> None:
    """A margin far finer than the noise between two runs of the same thing: neither a
    regression nor none can be claimed. `gate` and `reproduced` exit 5, not 2, which stays
    bad input."""
    base = imported(tmp_path, "base", 1)
    same = imported(tmp_path, "same", 2)
    gated = oltplab("gate", base, same, "--margin", "0.01%", cwd=tmp_path)
    assert gated.returncode == EXIT_UNDECIDED == 5, gated.stdout + gated.stderr
    assert "gate: undecided" in gated.stderr
    said = oltplab("reproduced", base, same, "--margin", "0.01%", cwd=tmp_path)
    assert said.returncode == EXIT_UNDECIDED, said.stdout + said.stderr
    assert "verdict: undecided" in said.stdout
    bad = oltplab("gate", base, same, "--margin", "lots", cwd=tmp_path)
    assert bad.returncode == 2


def test_every_output_option_makes_the_folders_it_names(tmp_path: Path) -> None:
    base = imported(tmp_path, "base", 1)
    slow = imported(tmp_path, "slow", 3, {16: 0.2})
    made = {
        ("export", base, "-o", "new/a/summary.csv"): "new/a/summary.csv",
        ("report", base, "-o", "new/b/report"): "new/b/report/report.md",
        ("gate", base, slow, "-o", "new/c/gate"): "new/c/gate/gate.md",
        ("replay", base, "-o", "new/d/replay"): "new/d/replay/replay.csv",
        ("site", base, slow, "-o", "new/e/site"): "new/e/site/index.html",
    }
    for command, written in made.items():
        done = oltplab(*command, cwd=tmp_path)
        assert done.returncode in (0, 1), (command, done.stderr)
        assert (tmp_path / written).is_file(), (command, done.stderr)
