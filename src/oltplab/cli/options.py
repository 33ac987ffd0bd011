"""Commands whose options are one frozen dataclass, declared where the command's work is
done (`oltplab.base.asking`): each field's metadata carries its help, names and bounds,
bound here to Typer, and the command's body takes one value of the class instead of a
long list of parameters (as `submit` is built from a scheduler's fields)."""

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


def _typer_parameter(said: Declared, kind: Any) -> Any:
    if said.argument:
        return typer.Argument(metavar=said.metavar, help=said.help, show_default=said.show_default)
    # A yes/no option is shown without a value placeholder (Typer would print `<bool>`).
    metavar = "" if kind is bool else said.metavar
    return typer.Option(*said.names, metavar=metavar, help=said.help, min=said.min, max=said.max)


def _parameter(field: dataclasses.Field[Any], kind: Any) -> inspect.Parameter:
    said = declared(field)
    annotation = kind if said is None else Annotated[kind, _typer_parameter(said, kind)]
    default = inspect.Parameter.empty if field.default is dataclasses.MISSING else field.default
    return inspect.Parameter(
        field.name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
    )


def bound(options: type[Options]) -> Callable[[Callable[[Options], None]], Callable[..., None]]:
    """A command whose parameters, for Typer, are the fields of `options`; it calls the
    body with them made into one value."""
    hints = typing.get_type_hints(options, include_extras=True)
    parameters = [
        _parameter(field, hints[field.name])
        for field in dataclasses.fields(options)  # type: ignore[arg-type]
    ]

    def bind(body: Callable[[Options], None]) -> Callable[..., None]:
        @functools.wraps(body)
        def command(**given: Any) -> None:
            body(options(**given))

        command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in parameters}
        return command

    return bind
