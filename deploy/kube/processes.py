"""The cluster's processes, started in their own sessions and known by pid and program."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def start(state: Path, name: str, argv: list[str]) -> int:
    logs = state / "logs"
    logs.mkdir(exist_ok=True)
    with open(logs / f"{name}.log", "ab") as log:
        process = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    (state / "pids").mkdir(exist_ok=True)
    (state / "pids" / name).write_text(f"{process.pid} {argv[0]}\n")
    return process.pid


def recorded(state: Path, component: str) -> tuple[int, str] | None:
    path = state / "pids" / component
    if not path.exists():
        return None
    pid, program = path.read_text().split(maxsplit=1)
    return int(pid), program.strip()


def alive(state: Path, component: str) -> bool:
    found = recorded(state, component)
    if found is None:
        return False
    pid, program = found
    try:
        # The pid is ours only while it still runs the program we started under it.
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode() == program
    except OSError:
        return False


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
