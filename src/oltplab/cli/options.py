"""The one binder of declared options to Typer: a command's options are the fields of a
frozen dataclass, declared where the command's work is done (`oltplab.base.asking`), and
its body takes one value of the class instead of a long list of parameters. `submit` binds
each scheduler's class the same way."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from oltplab.base.asking import Declared, declared

Options = TypeVar("Options")


def _typer_parameter(said: Declared, name: str, kind: Any) -> Any:
    if said.argument:
        return typer.Argument(metavar=said.metavar, help=said.help, show_default=said.show_default)
    if kind is bool:
        # One flag unless a pair is declared, shown without the `<bool>` placeholder.
        names = said.names or ("--" + name.replace("_", "-"),)
        return typer.Option(*names, metavar="", help=said.help)
    return typer.Option(
        *said.names, metavar=said.metavar, help=said.help, min=said.min, max=said.max
    )


def _repeated(kind: Any) -> Any | None:
    """The element type of an option given once per value (a tuple field), else None."""
    return typing.get_args(kind)[0] if typing.get_origin(kind) is tuple else None


def parameters(options: type[Any]) -> list[inspect.Parameter]:
    """The declared fields of `options` as the parameters of a Typer command; a tuple is an
    option given once per value."""
    hints = typing.get_type_hints(options)
    found = []
    for field in dataclasses.fields(options):
        said, kind, default = declared(field), hints[field.name], field.default
        if said is None:
            continue  # not an option: a scheduler's own setting, say
        if (element := _repeated(kind)) is not None:
            kind, default = list[element] | None, None  # type: ignore[valid-type]
        annotation = Annotated[kind, _typer_parameter(said, field.name, kind)]  # type: ignore[valid-type]
        empty = inspect.Parameter.empty
        default = empty if default is dataclasses.MISSING else default
        keyword = inspect.Parameter.KEYWORD_ONLY
        found.append(inspect.Parameter(field.name, keyword, annotation=annotation, default=default))
    return found


def given_values(options: type[Any], given: dict[str, Any]) -> dict[str, Any]:
    """What Typer parsed, as the class takes it: a repeated option given no value keeps
    the class's default."""
    hints = typing.get_type_hints(options)
    repeated = {name for name in given if _repeated(hints[name]) is not None}
    return {k: tuple(v) if k in repeated else v for k, v in given.items() if v or k not in repeated}


def made(options: type[Options], given: dict[str, Any]) -> Options:
    return options(**given_values(options, given))


def with_parameters(command: Callable[..., Any], found: list[inspect.Parameter]) -> None:
    command.__signature__ = inspect.Signature(found)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in found}


def bound(options: type[Options]) -> Callable[[Callable[[Options], None]], Callable[..., None]]:
    """A command whose parameters, for Typer, are the fields of `options`; it calls the
    body with them made into one value."""
    found = parameters(options)

    def bind(body: Callable[[Options], None]) -> Callable[..., None]:
        @functools.wraps(body)
        def command(**given: Any) -> None:
            body(made(options, given))

        with_parameters(command, found)
        return command

    return bind
