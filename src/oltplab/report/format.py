"""Numbers the way the reference report prints them."""

from __future__ import annotations

from oltplab.sizes import format_size


def number(value: float | None) -> str:
    """Thousands separators, no decimals for large values: 13385.4 -> "13,385"."""
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.2f}".rstrip("0").rstrip(".") if value % 1 else f"{value:,.0f}"


def percent(value: float | None) -> str:
    """Sign and one decimal: -20.2%, +4.2%."""
    return "-" if value is None else f"{value:+.1f}%"


def ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def setting(name: str, value: str | None) -> str:
    """Byte sizes in MySQL's own spelling, everything else as the server printed it."""
    if value is None or value == "":
        return "-"
    if (name.endswith(("_size", "_capacity", "_buffers")) or name == "redo capacity") and (
        value.isdigit()
    ):
        return format_size(int(value))
    return value
