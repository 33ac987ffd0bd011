"""The licence a user reads is the one the package metadata declares, and the bundled
Plotly keeps its own beside it."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_the_licence_file_and_the_package_metadata_agree() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    licence = (ROOT / "LICENSE").read_text()
    assert declared == {"text": "MIT"}
    assert licence.startswith("MIT License\n") and "the oltplab authors" in licence
    plotly = ROOT / "src" / "oltplab" / "report" / "assets" / "plotly-basic.LICENSE"
    assert "Plotly Technologies Inc." in plotly.read_text()
