"""Child processes that die with us, and clean-up of the ones a killed run left behind."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import IO

from oltplab.base import nofollow

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    # If oltplab is killed (even with SIGKILL) the kernel kills its engines and sysbench too,
    # so a resumed run never finds a stray server holding the datadir.
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def die_with(parent: int) -> None:
    """In a forked child: killed by the kernel when `parent` dies, however it dies. A parent
    killed before the signal was set leaves this child already adopted: it ends here."""
    _die_with_parent()
    if os.getppid() != parent:
        os._exit(1)


def spawn(
    command: list[str],
    stdout: IO[bytes] | int | None = subprocess.DEVNULL,
    stderr: IO[bytes] | int | None = subprocess.STDOUT,
    env: dict[str, str] | None = None,
    *,
    stdin_pipe: bool = False,
    pass_fds: tuple[int, ...] = (),
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        command,
        pass_fds=pass_fds,
        stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        env=env,
        preexec_fn=_die_with_parent,  # safe: spawned from the main thread only
        start_new_session=True,  # a Ctrl-C in the terminal reaches oltplab, which stops them
    )


def terminate(
    process: subprocess.Popen[bytes], timeout: float, stop_signal: int = signal.SIGTERM
) -> bool:
    """stop_signal (SIGTERM), wait up to timeout, then SIGKILL. True when it stopped on its own."""
    if process.poll() is not None:
        return True
    process.send_signal(stop_signal)
    try:
        process.wait(timeout)
        return True
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return False


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def process_uid(pid: int) -> int:
    """The real uid a process runs as (its /proc folder may say root's)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise ValueError(f"process {pid}: no Uid in its status")


def kill_stale(pid_file: Path, marker: str, uid: int) -> bool:
    """Kill the process named in pid_file if it runs as uid and its command line still
    contains marker.

    The marker (our own option file path) makes sure we never kill a process that merely
    reuses a pid we once had; the uid, that a pid the server's own uid wrote there (it owns
    the file) never makes us kill someone else's process.
    """
    try:
        pid = int(nofollow.read_text(pid_file).strip())
        if process_uid(pid) != uid:
            return False
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except (OSError, ValueError):
        return False
    if marker not in cmdline:
        return False
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return True
