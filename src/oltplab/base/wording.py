"""Words that depend on a count, the same in every output."""

from __future__ import annotations


def counted(count: int, noun: str) -> str:
    """`1 thread`, `4 threads`, `0 threads`."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"
