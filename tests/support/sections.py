"""The report's sections found by title: their numbers depend on which sections a run has."""

from __future__ import annotations

import re


def section(markdown: str, title: str) -> str:
    """A section's text, from its numbered heading to the next section's; AssertionError
    when the report has none of that title."""
    found = re.search(rf"^## \d+[a-z]?\. {re.escape(title)}", markdown, flags=re.MULTILINE)
    assert found is not None, f"no section {title!r} in the report"
    rest = markdown[found.start() :]
    following = rest.find("\n## ", 1)
    return rest if following < 0 else rest[:following]
