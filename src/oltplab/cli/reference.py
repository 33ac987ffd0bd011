"""The command-line reference of the documentation, generated from the Typer app itself: every
command with its usage, its help and each argument and option, so the page cannot say what
the code does not. `python3 -m oltplab.cli.reference` writes docs/reference/cli.md; a test
fails when the page differs from what the code generates now."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from oltplab.cli import app
from oltplab.spec.schema_docs import write_generated

PAGE = Path("docs") / "reference" / "cli.md"


def _cell(text: str) -> str:
    return " ".join(text.split())


# Typer carries a copy of Click of its own: its objects are told apart by what they have.
def _parameters(command: Any, context: Any) -> list[str]:
    rows = []
    for parameter in command.params:
        if getattr(parameter, "hidden", False):
            continue
        if parameter.param_type_name == "argument":
            name = parameter.metavar or parameter.make_metavar(context)
            said = getattr(parameter, "help", None) or ""
            if parameter.required:
                said += " (required)"
        else:
            record = parameter.get_help_record(context)
            if record is None:
                continue
            name, said = record
        rows += [f"`{_cell(name)}`", f": {_cell(said)}", ""]
    return rows


def _command(name: str, command: Any, parent: Any) -> list[str]:
    context = command.context_class(command, info_name=name.split()[-1], parent=parent)
    lines = [f"## oltplab {name}", "", "```text", command.get_usage(context), "```", ""]
    for paragraph in (command.help or "").split("\n\n"):
        if paragraph.strip():
            lines += [" ".join(paragraph.split()), ""]
    rows = _parameters(command, context)
    return lines + rows


def cli_reference() -> str:
    root: Any = typer.main.get_command(app)
    top = root.context_class(root, info_name="oltplab")
    lines = [
        "# Command-line reference",
        "",
        "Generated from the code (`python3 -m oltplab.cli.reference`); `oltplab COMMAND "
        "--help` prints the same.",
        "",
    ]
    for name, command in root.commands.items():
        if command.hidden:
            continue
        if hasattr(command, "commands"):
            group = command.context_class(command, info_name=name, parent=top)
            for sub_name, sub in command.commands.items():
                if not sub.hidden:
                    lines += _command(f"{name} {sub_name}", sub, group)
        else:
            lines += _command(name, command, top)
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    write_generated(cli_reference(), PAGE, Path(sys.argv[1]) if len(sys.argv) > 1 else None)
