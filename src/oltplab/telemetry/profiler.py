"""An on-CPU profile of the server during each measured cell, as a telemetry device.

`perf record -e cpu-clock -g` samples the server's threads with the cpu-clock software
event (virtual machines seldom expose hardware counters) and their call stacks; after the
cell, `perf script` is folded into one line per distinct stack, root first, with its
sample count (`<stem>.perf.folded.txt`, beside `<stem>.perf.data`). The server is one
process for the MySQL family; PostgreSQL's connections are processes forked later, which
`-p` does not follow, so a PostgreSQL profile holds its postmaster only.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from oltplab.base.processes import spawn, terminate
from oltplab.telemetry.devices import CellSite, Device

PERF = "perf"
SAMPLES_PER_SECOND = 499  # not a multiple of common timer ticks, so no aliasing
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
    return stem.with_name(stem.name + ".perf.folded.txt")


def read_folded(path: Path) -> Counter[str]:
    stacks: Counter[str] = Counter()
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks[stack] += int(count)
    return stacks


class Profiler(Device):
    name = PERF
    watches_cells = True
    has_series = False

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._stem: Path | None = None
        self._problem: str | None = None

    def start(self, site: CellSite, reference: float) -> bool:
        pid = site.server.server_pid()
        if shutil.which(PERF) is None or pid is None or not site.server.machine.is_local:
            return False
        self._stem, self._problem = site.stem, None
        data = site.stem.with_name(site.stem.name + ".perf.data")
        with site.stem.with_name(site.stem.name + ".perf.log").open("wb") as log:
            self._process = spawn(
                [PERF, "record", "-e", "cpu-clock", "-F", str(SAMPLES_PER_SECOND), "-g",
                 "-p", str(pid), "-o", str(data), "--quiet"],
                stdout=log,
            )  # fmt: skip
        return True

    def stop(self) -> str | None:
        if self._process is None or self._stem is None:
            return None
        early = self._process.poll()
        # SIGINT is how perf record is told to finish and write its data.
        terminate(self._process, 30, signal.SIGINT)
        self._process = None
        data = self._stem.with_name(self._stem.name + ".perf.data")
        script = subprocess.run(
            [PERF, "script", "-i", str(data), "-F", "comm,tid,time,event,ip,sym,dso"],
            capture_output=True, text=True, errors="replace", check=False,
        )  # fmt: skip
        if script.returncode != 0:
            self._problem = f"perf script: {script.stderr.strip()[:200]}"
            return self._problem
        stacks = fold(script.stdout.splitlines())
        folded_file(self._stem).write_text(
            "".join(f"{stack} {count}\n" for stack, count in stacks.most_common())
        )
        if early is not None:
            return f"perf record exited during the cell (code {early})"
        return None

    def error(self) -> str | None:
        return self._problem
