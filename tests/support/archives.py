"""Real results kept compressed in tests/data, unpacked for the tests that read them."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

DATA = Path(__file__).parents[1] / "data"


def unpacked(archive: str, into: pytest.TempPathFactory, name: str) -> Path:
    """tests/data/ARCHIVE (a .tar.xz of one results directory) unpacked into a fresh
    temporary folder, as NAME."""
    folder = into.mktemp(name) / name
    with tarfile.open(DATA / archive) as packed:
        packed.extractall(folder, filter="data")
    return folder
