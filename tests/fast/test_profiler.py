"""The on-CPU profiler with the real perf: it samples a process from before sysbench would
start (perf says it samples before `before_cell` returns), and a profile it could not take
is written down with the reason, which flags the cell. The process profiled is a busy
Python child: the device needs only a server's pid and where it runs."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from oltplab.engines.hosts import Host
from oltplab.telemetry.devices import CellSite, Telemetry
from oltplab.telemetry.profiler import Profiler, folded_file, read_folded

pytestmark = pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")


@dataclass
class _Process:
    """What the profiler asks of a server: its pid, and the machine it runs on."""

    pid: int | None
    machine: Host = field(default_factory=Host)

    def server_pid(self) -> int | None:
        return self.pid


def _profiled(tmp_path: Path, pid: int | None, seconds: float) -> tuple[Path, list[str], bool]:
    telemetry = Telemetry([Profiler()])
    stem = tmp_path / "Tier1G_RO_1th"
    telemetry.before_cell(CellSite(stem, server=_Process(pid)))  # type: ignore[arg-type]
    launched = time.time()
    time.sleep(seconds)
    collected = telemetry.after_cell(seconds, launched)
    return stem, collected.notes, collected.gap


def test_a_busy_process_is_sampled_from_the_first_moment(tmp_path: Path) -> None:
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        # Samples taken in the first half second: perf is sampling once before_cell returns
        # (without waiting for it, attaching alone took 0.1-1 s here).
        stem, notes, gap = _profiled(tmp_path, busy.pid, 0.5)
    finally:
        busy.kill()
        busy.wait()
    assert notes == [] and not gap
    stacks = read_folded(folded_file(stem))
    assert sum(stacks.values()) > 0
    assert any("python" in stack.lower() or "_PyEval" in stack for stack in stacks), stacks


def test_a_profile_not_taken_is_written_down_with_why(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    _, notes, gap = _profiled(tmp_path, gone.pid, 0.2)
    assert gap and len(notes) == 1 and notes[0].startswith("perf: exited before sampling"), notes

    _, notes, gap = _profiled(tmp_path, None, 0.2)
    assert gap and notes == ["perf: the server runs on another machine, or has no pid here"]
