"""Byte sizes written the way MySQL option files write them (K, M, G, T are powers of 1024)."""

import re

_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
_SIZE = re.compile(r"^\s*(\d+)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)


def parse_size(value: int | str) -> int:
    """Bytes from an int or a string such as "128M", "2G", "512MiB"."""
    if isinstance(value, bool):
        raise ValueError("expected a size such as 128M or 2G")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a size cannot be negative")
        return value
    match = _SIZE.match(str(value))
    if not match:
        raise ValueError(f"expected a size such as 128M or 2G, got {value!r}")
    number, unit = match.groups()
    return int(number) * _UNITS[unit.upper()]


def format_size(size: int) -> str:
    """The shortest exact spelling: 2147483648 -> "2G", 1536 -> "1536"."""
    for unit in ("T", "G", "M", "K"):
        if size and size % _UNITS[unit] == 0:
            return f"{size // _UNITS[unit]}{unit}"
    return str(size)


def duration_text(seconds: float) -> str:
    """`45s`, `3m 05s`, `2h 07m`, `1d 3h 00m`: as precise as a person needs."""
    whole = round(seconds)
    minutes, second = divmod(whole, 60)
    hours, minute = divmod(minutes, 60)
    days, hour = divmod(hours, 24)
    if days:
        return f"{days}d {hour}h {minute:02d}m"
    if hours:
        return f"{hours}h {minute:02d}m"
    return f"{minutes}m {second:02d}s" if minutes else f"{second}s"
