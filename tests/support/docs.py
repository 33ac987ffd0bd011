"""Pages the code generates, generated again to compare."""

from __future__ import annotations

import functools
import subprocess
import sys
import tempfile
from pathlib import Path


@functools.cache
def _pages(module: str) -> dict[str, str]:
    """Every page a module writes, as a fresh interpreter writes them: in this one, test
    modules have registered families and devices of their own, which the help of some
    options lists. Once a session: a module writes all its pages at once."""
    with tempfile.TemporaryDirectory(prefix="oltplab-pages-") as folder:
        subprocess.run([sys.executable, "-m", module, folder], check=True, capture_output=True)
        return {page.name: page.read_text() for page in Path(folder).iterdir()}


def generated(module: str, page: Path) -> str:
    """The page as `python -m MODULE FOLDER` writes it now."""
    return _pages(module)[page.name]
