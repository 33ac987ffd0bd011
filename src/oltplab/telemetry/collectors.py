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


@dataclass(frozen=True)
class TelemetryClock:
    """Where a cell's raw telemetry files sit on the sysbench clock: enough to read them
    again into the same series (the journal keeps it, `oltplab rebuild` uses it)."""

    start_clock: float  # sysbench's start, seconds after local midnight
    started_after: float  # the collectors' start, seconds after sysbench's (negative: before)
    duration: int  # seconds sysbench ran
    sources: tuple[str, ...]  # the collectors that ran, and the engine probe


@dataclass
class Collected:
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gap: bool = False
    clock: TelemetryClock | None = None

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


def raw_file(stem: Path, source: str) -> Path:
    suffix = "jsonl" if source == ENGINE_SOURCE else "txt"
    return stem.with_name(f"{stem.name}.{source}.{suffix}")


def source_series(stem: Path, source: str, clock: TelemetryClock) -> list[tuple[int, Values]]:
    """One collector's raw file as per-second values on the sysbench clock, the run's
    seconds only (samples after it, taken while waiting for the last one, describe an idle
    engine)."""
    path = raw_file(stem, source)
    if source == ENGINE_SOURCE:
        series = engine_series(read_samples(path))
    else:
        text = path.read_text(errors="replace")
        series = align(PARSERS[source](text), clock.start_clock, clock.started_after)
    return [(second, values) for second, values in series if 0 <= second <= clock.duration + 1]


def telemetry_rows(stem: Path, clock: TelemetryClock) -> list[Row]:
    """Every series a cell's raw telemetry files hold, as ledger rows."""
    return [
        row
        for source in clock.sources
        for row in to_rows(source, source_series(stem, source, clock))
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
        return raw_file(self._stem, source)

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
        sources = [*self._processes, *([ENGINE_SOURCE] if self._probe is not None else [])]
        clock = TelemetryClock(
            seconds_of_day(self.reference), self._started - self.reference, duration, tuple(sources)
        )
        collected = Collected(clock=clock)
        for name in self._absent:
            collected.notes.append(f"{name} not installed")
        if self._probe is not None and self._probe.error:
            collected.missing(f"engine probe: {self._probe.error}")
        for source in sources:
            self._add(collected, source, source_series(self._stem, source, clock), duration)
        return collected

    def _add(
        self, collected: Collected, source: str, series: list[tuple[int, Values]], duration: int
    ) -> None:
        collected.rows += to_rows(source, series)
        lost = missing_seconds({second for second, _ in series}, duration)
        if lost or source in self._exits:
            reason = self._exits.get(source, "")
            gap = f"no samples for {describe_seconds(lost)}" if lost else ""
            collected.missing(f"{source}: " + "; ".join(filter(None, [gap, reason])))
