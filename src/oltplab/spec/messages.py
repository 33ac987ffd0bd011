"""A spec's validation errors in the spec's own terms: where the key is, as the user wrote
it, and what was expected instead of pydantic's wording."""

from __future__ import annotations

import re

from pydantic_core import ErrorDetails

from oltplab.spec.sources import SOURCE_KINDS

# How much of a value the user gave an error echoes: a megabyte's name is no message.
ECHOED_CHARACTERS = 80


def echoed(value: object) -> str:
    """A value as an error shows it: its repr, cut past ECHOED_CHARACTERS and its length
    given."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= ECHOED_CHARACTERS:
        return repr(value)
    shown = repr(text[:ECHOED_CHARACTERS]) if isinstance(value, str) else text[:ECHOED_CHARACTERS]
    return f"{shown}... ({len(text):,} characters)"


def _location(loc: tuple[int | str, ...]) -> str:
    path = ""
    previous: int | str | None = None
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif previous == "source" and part in SOURCE_KINDS:
            pass  # the union's tag: the source's kind, not a key of the spec
        elif re.match(r"^[a-z_]+$", part) or not path:
            key = part if len(part) <= ECHOED_CHARACTERS else echoed(part)
            path += f".{key}" if path else key
        # Pydantic adds union tags and validator names to the location; they mean nothing
        # to users.
        previous = part
    return path or "(top level)"


# Pydantic's wording for a wrong kind of value, in the spec's terms.
_KIND_MESSAGES = {
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "string_type": "expected a string in quotes",
    "string_pattern_mismatch": "has characters not allowed here",
    "int_type": "expected a whole number",
    "float_type": "expected a number",
    "finite_number": "expected a finite number",
    "dict_type": "expected a table",
    "list_type": "expected a list",
}


def describe(error: ErrorDetails) -> str:
    loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and "[" in p))
    where = _location(loc)
    if error["type"] == "extra_forbidden":
        return f"{where}: unknown key; remove it or check its spelling"
    message = _KIND_MESSAGES.get(error["type"], error["msg"].removeprefix("Value error, "))
    value = error.get("input")
    if isinstance(value, str):  # a check's own message may echo it too
        message = message.replace(repr(value), echoed(value))
    if error["type"] == "missing" or isinstance(value, dict | list) or "got" in message:
        return f"{where}: {message}"
    return f"{where}: {message} (got {echoed(value)})"
