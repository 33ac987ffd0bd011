"""Commands whose options are one frozen dataclass: each field's annotation carries its
Typer argument or option and help, and the command's body takes one value of the class
instead of a long list of parameters (as `submit` is built from a scheduler's fields)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

Options = TypeVar("Options")


def bound(options: type[Options]) -> Callable[[Callable[[Options], None]], Callable[..., None]]:
    """A command whose parameters, for Typer, are the fields of `options`; it calls the
    body with them made into one value."""
    hints = typing.get_type_hints(options, include_extras=True)
    parameters = [
        inspect.Parameter(
            field.name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            annotation=hints[field.name],
            default=inspect.Parameter.empty
            if field.default is dataclasses.MISSING
            else field.default,
        )
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
