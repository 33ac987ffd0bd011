"""What the host is: recorded with every run so numbers can be traced to their machine."""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path
from typing import Any


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def memory_bytes() -> int:
    match = re.search(r"^MemTotal:\s+(\d+) kB", _read("/proc/meminfo"), re.M)
    return int(match.group(1)) * 1024 if match else 0


def cpu_model() -> str:
    match = re.search(r"^model name\s*:\s*(.+)$", _read("/proc/cpuinfo"), re.M)
    return match.group(1).strip() if match else platform.processor() or "unknown"


def describe_host() -> dict[str, Any]:
    return {
        "hostname": platform.node(),
        "kernel": platform.release(),
        "os": platform.platform(),
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "memory_bytes": memory_bytes(),
        "python": platform.python_version(),
    }
