"""What used the machine during each second of a cell: the server, sysbench, oltplab's own
processes, and everything else (other users' work, a neighbour on the hypervisor).

A sampler thread reads /proc once a second on the sysbench clock and writes cumulative
counters, one JSON line per sample: the host's CPU time by kind (/proc/stat), the run queue,
and the CPU time and context switches of the server (all its threads and child processes),
of sysbench and of oltplab's whole process tree. `load_series` turns them into per-second
values; "other" is the host's busy time minus oltplab's tree, so it is the CPU that neither
the server, nor sysbench, nor oltplab's collectors used.

It always runs (telemetry on or off): the per-transaction cost it gives (server CPU
microseconds and context switches per transaction) and the interference it sees are part of
the measurement. Only on the machine the server runs on; a server on an SSH host has none.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oltplab.base import metrics
from oltplab.telemetry.sampler import EverySecond, read_lines

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# A second is disturbed when processes that are neither the server, nor sysbench, nor
# oltplab's own, together with the hypervisor's steal, used at least this share of one CPU.
DISTURBED_CPU = 0.25
# A cell is flagged `interference` when at least this share of its steady seconds (and
# at least DISTURBED_MIN_SECONDS of them) were disturbed.
DISTURBED_SHARE = 0.10
DISTURBED_MIN_SECONDS = 2


# --- reading /proc --------------------------------------------------------------------------


def _stat_fields(pid: int | str) -> list[str]:
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _cpu_ticks(fields: list[str]) -> int:
    """utime + stime + the same of the children it has reaped."""
    return sum(int(fields[i]) for i in (11, 12, 13, 14))


def _switches(pid: int) -> int:
    """Voluntary and involuntary context switches of every thread of a process."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/task/{task}/status").read_text().splitlines():
                if "ctxt_switches:" in line:
                    total += int(line.split()[1])
    return total


def process_figures(pid: int) -> dict[str, float]:
    """CPU seconds and context switches of the server: the process with all its threads
    (MySQL), plus its child processes, running or already ended (PostgreSQL serves each
    connection from a child process; an ended one's CPU is in its parent's reaped-children
    time, its switches are not counted). The children are the main thread's: PostgreSQL's
    postmaster forks them, MySQL forks none."""
    try:
        ticks = _cpu_ticks(_stat_fields(pid))
        switches = _switches(pid)
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except (OSError, IndexError, ValueError):
        return {}
    for child in children:
        with contextlib.suppress(OSError, IndexError, ValueError):  # it may just have ended
            ticks += _cpu_ticks(_stat_fields(child))
            switches += _switches(int(child))
    return {"cpu_seconds": ticks / _CLOCK_TICKS, "switches": float(switches)}


@dataclass(frozen=True)
class HostTicks:
    busy: int  # user, nice, system, irq, softirq: CPU time spent by anything
    steal: int  # time the hypervisor gave this machine's CPUs to someone else
    running: int  # runnable tasks right now (the run queue, all CPUs)


def host_ticks(text: str) -> HostTicks:
    """The first line and procs_running of /proc/stat."""
    busy = steal = running = 0
    for line in text.splitlines():
        if line.startswith("cpu "):
            values = [int(v) for v in line.split()[1:]]
            busy = sum(values[i] for i in (0, 1, 2, 5, 6) if i < len(values))
            steal = values[7] if len(values) > 7 else 0
        elif line.startswith("procs_running"):
            running = int(line.split()[1])
    return HostTicks(busy, steal, running)


def tree_ticks(root: int) -> tuple[int, dict[int, tuple[str, int]]]:
    """CPU ticks of a process and all its descendants, and each descendant's name and ticks."""
    parents: dict[int, int] = {}
    found: dict[int, tuple[str, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        name = text[text.find("(") + 1 : text.rfind(")")]
        fields = text.rsplit(")", 1)[1].split()
        parents[int(entry)] = int(fields[1])
        found[int(entry)] = (name, _cpu_ticks(fields))
    inside = {root}
    changed = True
    while changed:
        added = {pid for pid, parent in parents.items() if parent in inside and pid not in inside}
        inside |= added
        changed = bool(added)
    members = {pid: found[pid] for pid in inside if pid in found}
    return sum(ticks for _, ticks in members.values()), members


# --- the sampler ---------------------------------------------------------------------------


class LoadSampler(EverySecond):
    """Samples the host and the processes once a second, on the sysbench clock, until stopped."""

    def __init__(self, server_pid: int | None, output: Path, reference: float) -> None:
        super().__init__("oltplab-load", output, reference)
        self._server_pid = server_pid

    def run(self) -> None:
        try:
            with self.output.open("w") as sink:
                for second in self.seconds():
                    sink.write(json.dumps(self.sample(second)) + "\n")
                    sink.flush()
        except OSError as exc:
            self.error = str(exc)

    def sample(self, second: float) -> dict[str, Any]:
        host = host_ticks(Path("/proc/stat").read_text())
        ours, members = tree_ticks(os.getpid())
        sample: dict[str, Any] = {
            "t": second,
            "busy": host.busy,
            "steal": host.steal,
            "running": host.running,
            "ours": ours,
            "sysbench": sum(t for name, t in members.values() if name == "sysbench"),
        }
        if self._server_pid is not None:
            figures = process_figures(self._server_pid)
            if figures:
                sample["server"] = figures["cpu_seconds"] * _CLOCK_TICKS
                sample["server_switches"] = figures["switches"]
        return sample


# --- reading the raw file back ---------------------------------------------------------------


def _rate(
    now: dict[str, Any], before: dict[str, Any], name: str, scale: float = _CLOCK_TICKS
) -> float:
    return max(0.0, (now[name] - before[name]) / scale / (now["t"] - before["t"]))


def load_series(
    samples: Iterable[dict[str, Any]], started_after: float = 0.0
) -> list[tuple[int, dict[str, float]]]:
    """Per-second values on the sysbench clock: CPUs used (1.0 = one CPU busy for the
    second) by the server, sysbench and everything else, the steal, the run queue, and the
    server's context switches per second. The samples' times count from the sampler's
    start, `started_after` seconds after sysbench's (negative: before it)."""
    series: list[tuple[int, dict[str, float]]] = []
    previous: dict[str, Any] | None = None
    for sample in samples:
        if previous is not None and sample["t"] > previous["t"]:
            busy = _rate(sample, previous, "busy")
            values = {
                metrics.STEAL.name: _rate(sample, previous, "steal"),
                metrics.OTHER_CPU.name: max(0.0, busy - _rate(sample, previous, "ours")),
                metrics.SYSBENCH_CPU.name: _rate(sample, previous, "sysbench"),
                metrics.RUN_QUEUE.name: float(sample["running"]),
            }
            if "server" in sample and "server" in previous:
                values[metrics.SERVER_CPU.name] = _rate(sample, previous, "server")
                switches = _rate(sample, previous, "server_switches", 1.0)
                values[metrics.SERVER_SWITCHES.name] = switches
            series.append((round(sample["t"] + started_after), values))
        previous = sample
    return series


# --- judging a cell ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Interference:
    disturbed: int  # steady seconds disturbed
    steady: int  # steady seconds
    peak_cpu: float  # the most other load + steal in one of them

    @property
    def flagged(self) -> bool:
        return self.disturbed >= max(DISTURBED_MIN_SECONDS, DISTURBED_SHARE * self.steady)

    def note(self) -> str:
        return (
            f"interference {self.disturbed} of {self.steady} steady s "
            f"(other load and steal up to {self.peak_cpu:.2f} CPU)"
        )


def interference(
    other: dict[int, float], steal: dict[int, float], steady_from: int, last: int
) -> Interference | None:
    """How much of the steady window [steady_from, last] (seconds of the run) other load
    disturbed; None without load samples."""
    seconds = range(steady_from, last + 1)
    if not other or not seconds:
        return None
    load = [other.get(s, 0.0) + steal.get(s, 0.0) for s in seconds]
    disturbed = sum(1 for value in load if value >= DISTURBED_CPU)
    return Interference(disturbed, len(seconds), max(load))


def round_interference(path: Path, seconds: int) -> Interference | None:
    """How much other load disturbed a sliced round, from its sampler's raw file: the
    round's seconds 1..`seconds` since its first slot; None without samples."""
    series = load_series(read_lines(path))
    other = {s: v[metrics.OTHER_CPU.name] for s, v in series}
    steal = {s: v[metrics.STEAL.name] for s, v in series}
    return interference(other, steal, 1, seconds)
