"""What the error codes sysbench ignores mean: MySQL's error numbers (client ones included,
for the connections it loses and makes again) and PostgreSQL's SQLSTATEs."""

from __future__ import annotations

MEANINGS = {
    "1020": "record changed since last read",
    "1205": "lock wait timeout",
    "1213": "deadlock",
    "2006": "server has gone away",
    "2013": "lost connection",
    "2055": "lost connection",
    "08006": "connection failure",
    "23505": "unique violation",
    "40001": "serialization failure",
    "40P01": "deadlock",
    "55P03": "lock not available",
    "57014": "query canceled",
}


def error_code_name(code: str) -> str:
    """`1213 deadlock`, or the code alone when its meaning is not known here."""
    meaning = MEANINGS.get(code)
    return f"{code} {meaning}" if meaning else code


def codes_text(codes: tuple[tuple[str, int], ...] | list[tuple[str, int]]) -> str:
    """`1213 deadlock x45, 1205 lock wait timeout x2`: every code with its count."""
    return ", ".join(f"{error_code_name(code)} x{count:,}" for code, count in codes)
