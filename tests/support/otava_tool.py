"""Apache Otava in a virtual environment of its own (its pins clash with ours), made once
from the package registry and cached."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from oltplab.engines.cache import cache_root

OTAVA = "apache-otava==0.8.0"


def otava_command() -> Path:
    venv = cache_root() / "otava-0.8.0"
    program = venv / "bin" / "otava"
    if not program.is_file():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "--quiet", OTAVA], check=True, timeout=900
        )
    return program
