"""Telemetry around one measured cell: OS collectors and the engine probe, started and
stopped with it, their raw files kept next to the sysbench output, their series placed on
the sysbench clock.

A collector that is missing, dies or falls silent never fails the cell: what is missing is
written down and the cell is flagged `telemetry-gap`.
"""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from oltplab.engines.control import Control
from oltplab.hosts import Host
from oltplab.processes import terminate
from oltplab.telemetry.engine import EngineProbe, engine_series, read_samples
from oltplab.telemetry.parsers import PARSERS, Values, align

log = logging.getLogger("oltplab")

# What each OS collector runs; the name is also the raw file's suffix (.iostat.txt, ...).
OS_COLLECTORS: dict[str, list[str]] = {
    "iostat": ["iostat", "-dxm", "-t", "1"],
    "vmstat": ["vmstat", "-n", "-t", "1"],
    "mpstat": ["mpstat", "-P", "ALL", "1"],
    "dstat": ["dstat", "-t", "-c", "-d", "-n", "-g", "-y", "--nocolor", "1"],
}
# Writing to a file, the tools would buffer their output and lose its tail when stopped:
# line buffering for C stdio (stdbuf) and for dstat's Python.
LINE_BUFFERED = ["stdbuf", "-oL", "env", "PYTHONUNBUFFERED=1"]
ENGINE_SOURCE = "engine"
# Seconds waited after sysbench ends so every collector prints the run's last second.
TAIL_SECONDS = 1.3

Row = tuple[str, str, int, float]  # source, metric, second, value


@dataclass
class Collected:
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gap: bool = False

    def missing(self, note: str) -> None:
        self.notes.append(note)
        self.gap = True


def seconds_of_day(moment: float) -> float:
    local = datetime.fromtimestamp(moment)
    return local.hour * 3600 + local.minute * 60 + local.second + local.microsecond / 1e6


def to_rows(source: str, series: list[tuple[int, Values]]) -> list[Row]:
    """Long rows, without the metrics that stayed at zero the whole time (idle devices,
    counters of statements the workload never runs)."""
    moving = {name for _, values in series for name, value in values.items() if value != 0}
    return [
        (source, name, second, value)
        for second, values in series
        for name, value in values.items()
        if name in moving
    ]


def missing_seconds(seconds: set[int], duration: int) -> list[int]:
    """Seconds of the run with no sample; the first and last may fall either side of
    the run by rounding and are not required."""
    return [s for s in range(2, duration) if s not in seconds]


def describe_seconds(seconds: list[int]) -> str:
    if not seconds:
        return ""
    if len(seconds) == seconds[-1] - seconds[0] + 1:
        return f"{seconds[0]}-{seconds[-1]} s" if len(seconds) > 1 else f"{seconds[0]} s"
    return f"{len(seconds)} s between {seconds[0]} and {seconds[-1]} s"


class CellTelemetry:
    """Start before sysbench, stop after it; `collect` gives the rows for the ledger."""

    def __init__(
        self,
        stem: Path,
        connect: Callable[[], Control] | None,
        server_pid: int | None,
        machine: Host,
    ) -> None:
        """machine is where the engine runs: the OS collectors run there too."""
        self._stem = stem
        self._machine = machine
        self._connect = connect
        self._pid = server_pid
        self._processes: dict[str, subprocess.Popen[bytes]] = {}
        self._exits: dict[str, str] = {}
        self._absent: list[str] = []
        self._probe: EngineProbe | None = None
        self._started = 0.0
        self.reference = 0.0

    def path(self, source: str) -> Path:
        suffix = "jsonl" if source == ENGINE_SOURCE else "txt"
        return self._stem.with_name(f"{self._stem.name}.{source}.{suffix}")

    def start(self) -> None:
        self._started = time.time()
        for name, command in OS_COLLECTORS.items():
            if not self._machine.has(command[0]):
                self._absent.append(name)
                continue
            with self.path(name).open("wb") as sink:
                self._processes[name] = self._machine.spawn(LINE_BUFFERED + command, stdout=sink)
        # The reference is the sysbench start: the caller launches it right after this.
        self.reference = time.time()
        if self._connect is not None:
            self._probe = EngineProbe(
                self._connect, self._pid, self.path(ENGINE_SOURCE), self.reference
            )
            self._probe.start()

    def stop(self) -> None:
        """Stop everything; a collector that had already exited is noted as such."""
        if self._probe is not None:
            self._probe.stop()
        for name, process in self._processes.items():
            code = process.poll()
            if code is not None:
                how = f"signal {-code}" if code < 0 else f"code {code}"
                self._exits[name] = f"{name} exited during the cell ({how})"
            terminate(process, 2)

    def finish(self, duration: float) -> Collected:
        """Wait for the run's last second to be sampled, stop, and parse what was collected."""
        time.sleep(max(0.0, self.reference + duration + TAIL_SECONDS - time.time()))
        self.stop()
        return self.collect(round(duration))

    def collect(self, duration: int) -> Collected:
        collected = Collected()
        for name in self._absent:
            collected.notes.append(f"{name} not installed")
        start_clock = seconds_of_day(self.reference)
        for name in self._processes:
            text = self.path(name).read_text(errors="replace")
            series = align(PARSERS[name](text), start_clock, self._started - self.reference)
            self._add(collected, name, series, duration)
        if self._probe is not None:
            if self._probe.error:
                collected.missing(f"engine probe: {self._probe.error}")
            series = engine_series(read_samples(self.path(ENGINE_SOURCE)))
            self._add(collected, ENGINE_SOURCE, series, duration)
        return collected

    def _add(
        self, collected: Collected, source: str, series: list[tuple[int, Values]], duration: int
    ) -> None:
        # Samples after the run (waiting for the last second) describe an idle engine.
        series = [(second, values) for second, values in series if 0 <= second <= duration + 1]
        collected.rows += to_rows(source, series)
        lost = missing_seconds({second for second, _ in series}, duration)
        if lost or source in self._exits:
            reason = self._exits.get(source, "")
            gap = f"no samples for {describe_seconds(lost)}" if lost else ""
            collected.missing(f"{source}: " + "; ".join(filter(None, [gap, reason])))
