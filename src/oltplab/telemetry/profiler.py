"""An on-CPU profile of the server during each measured cell, as a telemetry device.

`perf record -e cpu-clock -g` samples the server's threads with the cpu-clock software
event (virtual machines seldom expose hardware counters) and their call stacks; after the
cell, `perf script` is folded into one line per distinct stack, root first, with its
sample count (`<stem>.perf.folded.txt`, beside `<stem>.perf.data`). The server is one
process for the MySQL family; PostgreSQL's connections are processes forked later, which
`-p` does not follow, so a PostgreSQL profile holds its postmaster only.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from oltplab.base.processes import spawn, terminate
from oltplab.store.directory import beside
from oltplab.telemetry.devices import CellSite, Device

PERF = "perf"
SAMPLES_PER_SECOND = 499  # not a multiple of common timer ticks, so no aliasing
READY_SECONDS = 30
_FRAME = re.compile(r"^\s+[0-9a-f]+\s+(?P<symbol>.+?)\s+\((?P<dso>[^)]*)\)\s*$")
_OFFSET = re.compile(r"\+0x[0-9a-f]+$")


def fold(lines: Iterable[str]) -> Counter[str]:
    """`perf script` output as folded stacks: "root;...;leaf" -> samples."""
    stacks: Counter[str] = Counter()
    frames: list[str] = []
    in_sample = False
    for line in lines:
        if not line.strip():
            if in_sample and frames:
                stacks[";".join(reversed(frames))] += 1
            frames, in_sample = [], False
        elif not line[0].isspace():
            in_sample, frames = True, []
        elif in_sample and (m := _FRAME.match(line)):
            symbol = _OFFSET.sub("", m["symbol"])
            if symbol == "[unknown]":
                symbol = f"[{Path(m['dso']).name or 'unknown'}]"
            frames.append(symbol.replace(";", ":"))
    if in_sample and frames:
        stacks[";".join(reversed(frames))] += 1
    return stacks


def folded_file(stem: Path) -> Path:
    return beside(stem, PERF, "folded.txt")


def read_folded(path: Path) -> Counter[str]:
    stacks: Counter[str] = Counter()
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks[stack] += int(count)
    return stacks


def _answer(pipe: int, timeout: float) -> bytes | None:
    """What a child wrote to `pipe` within `timeout` seconds: b"" when it closed the pipe
    (it exited), None when it said nothing."""
    readable, _, _ = select.select([pipe], [], [], timeout)
    return os.read(pipe, 64) if readable else None


class Profiler(Device):
    name = PERF
    watches_cells = True
    has_series = False

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._control: int | None = None
        self._stem: Path | None = None
        self._problem: str | None = None

    def start(self, site: CellSite, reference: float) -> bool:
        if shutil.which(PERF) is None:
            return False
        self._stem, self._problem = site.stem, None
        pid = site.server.server_pid()
        if pid is None or not site.server.machine.is_local:
            self._problem = "perf: the server runs on another machine, or has no pid here"
            return True
        data = beside(site.stem, PERF, "data")
        # perf starts with its events off and says "ack" once told to turn them on: only
        # then does it sample. Attaching takes 0.1-1 s idle, and longer when the host is
        # busy; without waiting, a 4 s cell under six CPU hogs ended before its first sample.
        control_read, control_write = os.pipe()
        ack_read, ack_write = os.pipe()
        with beside(site.stem, PERF, "log").open("wb") as log:
            self._process = spawn(
                [PERF, "record", "-e", "cpu-clock", "-F", str(SAMPLES_PER_SECOND), "-g",
                 "-p", str(pid), "-o", str(data), "--quiet", "--delay", "-1",
                 "--control", f"fd:{control_read},{ack_write}"],
                stdout=log, pass_fds=(control_read, ack_write),
            )  # fmt: skip
        os.close(control_read)
        os.close(ack_write)
        # perf ends when its control pipe closes: it stays open until the cell ends.
        self._control = control_write
        try:
            os.write(control_write, b"enable\n")
            answer = _answer(ack_read, READY_SECONDS)
        except BrokenPipeError:  # perf exited before reading it
            answer = b""
        finally:
            os.close(ack_read)
        if answer is None or not answer.startswith(b"ack"):
            self._problem = self._not_started(exiting=answer is not None)
        return True

    def _ended(self, stop_signal: int, timeout: float) -> None:
        assert self._process is not None and self._control is not None
        terminate(self._process, timeout, stop_signal)
        os.close(self._control)
        self._process, self._control = None, None

    def _not_started(self, exiting: bool) -> str:
        assert self._process is not None and self._stem is not None
        process = self._process
        self._ended(signal.SIGTERM, 5)
        if not exiting:
            return f"perf: did not start sampling within {READY_SECONDS} s"
        exited = process.returncode
        said = beside(self._stem, PERF, "log").read_text(errors="replace")
        return f"perf: exited before sampling (code {exited}) {said.strip()[:200]}".rstrip()

    def stop(self) -> str | None:
        if self._process is None or self._stem is None:
            return None
        early = self._process.poll()
        # SIGINT is how perf record is told to finish and write its data.
        self._ended(signal.SIGINT, 30)
        data = beside(self._stem, PERF, "data")
        script = subprocess.run(
            [PERF, "script", "-i", str(data), "-F", "comm,tid,time,event,ip,sym,dso"],
            capture_output=True, text=True, errors="replace", check=False,
        )  # fmt: skip
        if script.returncode != 0:
            self._problem = f"perf script: {script.stderr.strip()[:200]}"
            return None
        stacks = fold(script.stdout.splitlines())
        folded_file(self._stem).write_text(
            "".join(f"{stack} {count}\n" for stack, count in stacks.most_common())
        )
        if not stacks:
            self._problem = "perf: no sample of the server in the cell"
        if early is not None:
            return f"perf: exited during the cell (code {early})"
        return None

    def error(self) -> str | None:
        return self._problem
