"""What the host is: described once per run, and that one description recorded with the
run in the ledger and in run.json, so numbers can be traced to their machine."""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path
from typing import Any


def _read(path: str | Path) -> str:
    """A /proc or /sys file's text, stripped; "" when there is none."""
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def _selected(choices: str) -> str | None:
    """ "always [madvise] never" -> "madvise"."""
    if not choices:
        return None
    match = re.search(r"\[([^\]]+)\]", choices)
    return match.group(1) if match else choices.strip()


def memory_bytes() -> int:
    match = re.search(r"^MemTotal:\s+(\d+) kB", _read("/proc/meminfo"), re.M)
    return int(match.group(1)) * 1024 if match else 0


def cpu_model() -> str:
    match = re.search(r"^model name\s*:\s*(.+)$", _read("/proc/cpuinfo"), re.M)
    return match.group(1).strip() if match else platform.processor() or "unknown"


def machine_name() -> str:
    """What this machine is called where a scheduler placed the run: Kubernetes' node (the
    manifests set OLTPLAB_MACHINE), Slurm's node, else the host name. Two Slurm nodes may
    share a host name; their node names differ."""
    return os.environ.get("OLTPLAB_MACHINE") or os.environ.get("SLURMD_NODENAME") or platform.node()


def describe_host() -> dict[str, Any]:
    """This machine: what it is, and the kernel settings that move database numbers."""
    return {
        "machine": machine_name(),
        "hostname": platform.node(),
        "kernel": platform.release(),
        "os": platform.platform(),
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "memory_bytes": memory_bytes(),
        "python": platform.python_version(),
        "cpu_governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
        or "not exposed",
        "transparent_hugepages": _selected(_read("/sys/kernel/mm/transparent_hugepage/enabled")),
        "swappiness": _read("/proc/sys/vm/swappiness") or None,
    }


def disk_of(path: Path) -> dict[str, Any]:
    """The filesystem and block device a directory lives on."""
    path = path.resolve()
    best: tuple[str, str, str] | None = None
    for line in _read("/proc/self/mounts").splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        device, mount, fstype = fields[0], fields[1].replace("\\040", " "), fields[2]
        if (path == Path(mount) or Path(mount) in path.parents) and (
            best is None or len(mount) > len(best[1])
        ):
            best = (device, mount, fstype)
    facts: dict[str, Any] = {"path": str(path)}
    if best:
        facts.update(device=best[0], mount=best[1], filesystem=best[2])
    usage = os.statvfs(path if path.exists() else path.parent)
    facts["size_bytes"] = usage.f_blocks * usage.f_frsize
    facts["free_bytes"] = usage.f_bavail * usage.f_frsize
    block = (
        Path("/sys/dev/block")
        / f"{os.major(os.stat(path).st_dev)}:{os.minor(os.stat(path).st_dev)}"
    )
    if block.exists():
        disk = block.resolve()
        if (disk / "partition").exists():
            disk = disk.parent
        facts["block_device"] = disk.name
        facts["rotational"] = _read(disk / "queue" / "rotational") == "1"
        facts["model"] = _read(disk / "device" / "model") or None
        facts["scheduler"] = _selected(_read(disk / "queue" / "scheduler"))
    return facts
