"""Pages the code generates, generated again to compare."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def generated(module: str, page: Path, folder: Path) -> str:
    """A page as a fresh interpreter writes it: in this one, test modules have registered
    families and devices of their own, which the help of some options lists."""
    subprocess.run([sys.executable, "-m", module, str(folder)], check=True, capture_output=True)
    return (folder / page.name).read_text()
