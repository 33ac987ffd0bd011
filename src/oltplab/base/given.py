"""The values a user gives on the command line, read and checked before anything is
written: a percentage, a duration, a folder, a measure's name."""

from __future__ import annotations

import re
from pathlib import Path

from oltplab.base.asking import MARGIN
from oltplab.base.errors import OltplabError
from oltplab.base.metrics import Measure, measure_named


def parse_percent(text: str, option: str) -> float:
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        value = float("nan")
    if not 0 < value <= 100:
        raise OltplabError(f"{option} {text}: expected a percentage above 0 and up to 100, e.g. 3%")
    return value


def margin_pct(given: str | None, default: float) -> float:
    """The --margin given, as a percentage, or the default (the spec's, usually)."""
    return default if given is None else parse_percent(given, MARGIN)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str, option: str) -> float:
    """`90s`, `30m`, `2h`, `1d` (a bare number is minutes) in seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    seconds = float(match.group(1)) * _UNITS[match.group(2) or "m"] if match else 0.0
    if not 0 < seconds <= 7 * 86400:
        raise OltplabError(
            f"{option} {text}: expected a time such as 90s, 30m or 2h (at most 7 days)"
        )
    return seconds


def folder_option(path: Path | None, option: str) -> Path | None:
    """An option naming a folder to use or create, checked before anything is written:
    a file standing there is bad input, not a failure halfway through the run."""
    if path is None:
        return None
    for place in (path, *path.parents):
        if place.exists():
            if not place.is_dir():
                raise OltplabError(f"{option} {path}: {place} is a file; give a folder")
            break
    return path.resolve()


def measure_of(name: str) -> Measure:
    """The --measure named, or a one-line error naming the choices."""
    try:
        return measure_named(name)
    except ValueError as exc:
        raise OltplabError(f"--measure {exc}") from None
