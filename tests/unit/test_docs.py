"""The documentation says what the code does: its generated pages are what the code
generates now."""

from __future__ import annotations

from pathlib import Path

from oltplab.cli.reference import PAGE, cli_reference

ROOT = Path(__file__).parents[2]


def test_the_cli_reference_is_what_the_code_generates_now() -> None:
    """Regenerate with python3 -m oltplab.cli.reference when a command or option changes."""
    assert (ROOT / PAGE).read_text() == cli_reference()
