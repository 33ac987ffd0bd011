"""Words that depend on a count, and names as one line, the same in every output."""

from __future__ import annotations

import re
from pathlib import Path

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def shown(name: object) -> str:
    """A file name as one line of output: a newline or other control character in it is
    printed escaped (\\n), so that one name cannot pass for two lines or move the cursor."""
    return _CONTROL.sub(lambda m: repr(m.group(0))[1:-1], str(name))


def report_hint(results: list[Path]) -> str:
    """The report that shows these results: each directory once (`gate A A` is one run),
    side by side in a folder of its own when there are several."""
    unique = list({path.resolve(): path for path in results}.values())
    named = " ".join(shown(path) for path in unique)
    if len(unique) == 1:
        return f"oltplab report {named}"
    return f"oltplab report {named} -o DIR (the {len(unique)} side by side)"


def counted(count: int, noun: str) -> str:
    """`1 thread`, `4 threads`, `0 threads`."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"
