"""The command-line reference of the documentation, generated from the Typer app itself.
`python3 -m oltplab.cli.reference` writes docs/reference/cli.md; a test fails when the page
differs from what the code generates now."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from oltplab.cli import app
from oltplab.report.command_reference import command_reference
from oltplab.spec.schema_docs import write_generated

PAGE = Path("docs") / "reference" / "cli.md"


def cli_reference() -> str:
    return command_reference(typer.main.get_command(app), "python3 -m oltplab.cli.reference")


if __name__ == "__main__":
    write_generated(cli_reference(), PAGE, Path(sys.argv[1]) if len(sys.argv) > 1 else None)
