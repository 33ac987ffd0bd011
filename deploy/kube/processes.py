"""The cluster's processes, started in their own sessions and known by pid and program."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def start_time(pid: int) -> str | None:
    """The process's start time (clock ticks after boot): with its pid, what names it
    uniquely, as a reused pid starts later. None once it has ended or become a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else fields[19]


def start(state: Path, name: str, argv: list[str], env: dict[str, str] | None = None) -> int:
    logs = state / "logs"
    logs.mkdir(exist_ok=True)
    with open(logs / f"{name}.log", "ab") as log:
        process = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env={**os.environ, **(env or {})},
        )  # fmt: skip
    (state / "pids").mkdir(exist_ok=True)
    (state / "pids" / name).write_text(f"{process.pid} {start_time(process.pid)}\n")
    return process.pid


def recorded(state: Path, component: str) -> tuple[int, str] | None:
    path = state / "pids" / component
    if not path.exists():
        return None
    pid, started = path.read_text().split()
    return int(pid), started


def alive(state: Path, component: str) -> bool:
    found = recorded(state, component)
    return found is not None and start_time(found[0]) == found[1]


def stop(state: Path, component: str, seconds: float = 20) -> None:
    found = recorded(state, component)
    if found is None or not alive(state, component):
        return
    pid = found[0]
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + seconds
    while alive(state, component) and time.monotonic() < deadline:
        time.sleep(0.2)
    if alive(state, component):
        os.kill(pid, signal.SIGKILL)
        while alive(state, component):
            time.sleep(0.1)


def shims(state: Path) -> list[int]:
    """containerd's shims for this cluster: they name its socket on their command line."""
    marker = str(state / "containerd" / "containerd.sock").encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"containerd-shim-runc-v2") and marker in argv:
            found.append(int(entry.name))
    return found
