"""TOML and JSON read with their nesting bounded, so that a hostile file is bad input.

tomllib's time and memory grow with the square of a dotted key's parts (a key of 16,000
parts, 32 KB, took 1.1 GB; one of 600 KB, 24 GB), it recurses once per nested array or
inline table, so that a deep one ends in RecursionError, and each table and array it makes
costs it about a kilobyte. A linear scan of the text refuses a key of too many parts, too
deep a nesting and too many tables before tomllib sees them. json recurses too, but stops
at Python's recursion limit with little memory: only its RecursionError is made a
ValueError, as bad JSON is.
"""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

# The deepest real spec (examples/, the docs' specs) nests 5 levels, arrays of tables in
# tables, and its longest dotted key is [config.extra.mariadb], 3 parts: 32 leaves room
# for any spec or import map a person writes, and costs tomllib a few thousand steps a key.
MAX_DEPTH = 32
# Arrays, tables and dotted key parts in one text: the largest example has 52. With this
# many, tomllib's peak stays tens of MB over any spec text the size limit lets through.
MAX_CONTAINERS = 10_000

# What ends a run of dotted key parts, opens or closes a level, or starts a string or a
# comment, in which none of these count.
_SIGNIFICANT = re.compile(r"[\"'#.\[\]{}=,\n]")
_BASIC = re.compile(r'"(?:[^"\\\n]++|\\.)*+"')
# A multi-line string ends at its first unescaped delimiter, and up to two quotes right
# after it are its own (TOML 1.0: """a"""" is 'a"').
_MULTI_BASIC = re.compile(r'"""(?:[^"\\]++|\\.|"(?!""))*+"""(?:"{1,2})?', re.DOTALL)
_LITERAL = re.compile(r"'[^'\n]*+'")
_MULTI_LITERAL = re.compile(r"'''.*?'''(?:'{1,2})?", re.DOTALL)


class TooDeep(tomllib.TOMLDecodeError):
    """A TOML text nested or dotted beyond MAX_DEPTH, or with more than MAX_CONTAINERS
    arrays, tables and key parts: refused before it is parsed. A kind of
    TOMLDecodeError, so that a reader that takes a text it cannot parse as none takes it."""


def load_toml(text: str) -> dict[str, Any]:
    """tomllib.loads of a text within the bounds above; TooDeep, or tomllib's
    TOMLDecodeError, otherwise."""
    check_nesting(text)
    return tomllib.loads(text)


def load_json(text: str | bytes) -> Any:
    """json.loads; a text nested too deep for Python's stack is a ValueError, as bad JSON
    is (json.JSONDecodeError is one), not a RecursionError."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("arrays and objects nested too deep to read") from None


def check_nesting(text: str) -> None:
    """TooDeep, naming the line, for a key of more than MAX_DEPTH dotted parts, arrays and
    tables nested more than MAX_DEPTH deep, or more than MAX_CONTAINERS of them all; one
    pass over the text, strings and comments skipped. An unterminated string ends the
    scan: tomllib stops there too."""
    depth = dots = containers = 0
    position = 0
    while (found := _SIGNIFICANT.search(text, position)) is not None:
        char, position = found.group(), found.end()
        if char in "\"'":
            position = _string_end(text, found.start())
        elif char == "#":
            position = text.find("\n", position)
        elif char in "=,]}\n":
            dots = 0
            depth = max(0, depth - 1) if char in "]}" else depth
        else:
            containers += 1
            dots, depth = (dots + 1, depth) if char == "." else (0, depth + 1)
            problem = _beyond(dots, depth, containers)
            if problem:
                raise TooDeep(
                    f"line {_line(text, found.start())}: {problem}, beyond any oltplab reads"
                )
        if position < 0:
            return


def _beyond(dots: int, depth: int, containers: int) -> str | None:
    if dots >= MAX_DEPTH:
        return f"a key of more than {MAX_DEPTH} dotted parts"
    if depth > MAX_DEPTH:
        return f"arrays and tables nested more than {MAX_DEPTH} deep"
    if containers > MAX_CONTAINERS:
        return f"more than {MAX_CONTAINERS:,} arrays, tables and dotted key parts"
    return None


def _string_end(text: str, start: int) -> int:
    """Where the string starting at `start` ends, -1 where it does not."""
    if text.startswith('"""', start):
        pattern = _MULTI_BASIC
    elif text.startswith("'''", start):
        pattern = _MULTI_LITERAL
    else:
        pattern = _BASIC if text[start] == '"' else _LITERAL
    found = pattern.match(text, start)
    return -1 if found is None else found.end()


def _line(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1
