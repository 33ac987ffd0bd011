"""The command-line reference of the documentation, as Markdown, from the Click command tree
Typer builds of the application: every command with its usage, its help and each argument
and option, so the page cannot say what the code does not."""

from __future__ import annotations

from typing import Any


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


def command_reference(root: Any, generator: str) -> str:
    """The page for the command group `root`, naming the `generator` that writes it."""
    top = root.context_class(root, info_name="oltplab")
    lines = [
        "# Command-line reference",
        "",
        f"Generated from the code (`{generator}`); `oltplab COMMAND --help` prints the same.",
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
