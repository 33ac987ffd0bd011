"""Telemetry devices: each collector is a device with lifecycle hooks that the runner calls
in one place (before a cell, after it, and after a session's last cell).

A device that is missing, dies or falls silent never fails the cell: what is missing is
written down and the cell is flagged `telemetry-gap`.
"""

from __future__ import annotations

import math
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from oltplab.base import metrics
from oltplab.base.processes import terminate
from oltplab.engines.family import BENCHMARK_DATABASE
from oltplab.engines.hosts import Host
from oltplab.engines.server import Server
from oltplab.store.directory import beside
from oltplab.telemetry.collectors import (
    Collected,
    TelemetryClock,
    describe_seconds,
    missing_seconds,
    seconds_of_day,
    to_rows,
    within_run,
)
from oltplab.telemetry.engine import ENGINE_LEVELS, EngineProbe, engine_series, read_samples
from oltplab.telemetry.load import LoadSampler, load_series
from oltplab.telemetry.parsers import Parser, Values, align
from oltplab.telemetry.sampler import read_lines
from oltplab.telemetry.summaries import engine_summary

# The tools print in the C locale: one decimal point and 24-hour clocks to read. Writing
# to a file, they would buffer their output and lose its tail when stopped: line buffered.
# At a lower priority, their once-a-second wake-ups yield to the engine and sysbench.
PLAIN_OUTPUT = ["env", "LC_ALL=C", "nice", "-n", "10", "stdbuf", "-oL"]
# Seconds waited after sysbench ends so that an OS tool, on its own once-a-second clock,
# prints the run's last second; a sampler of ours ticks on sysbench's clock and has taken
# its last sample when sysbench ends, within a short write.
TOOL_TAIL_SECONDS = 1.3
SAMPLER_TAIL_SECONDS = 0.2
POLL_SECONDS = 0.05


@dataclass(frozen=True)
class CellSite:
    """Where a cell's telemetry goes and what it watches."""

    stem: Path  # raw files are <stem>.<device>.txt / .jsonl beside the sysbench output
    server: Server


class Device:
    """A collector, chosen by its name (telemetry/registry.py). Every hook is optional. A
    device that watches cells writes one raw file beside the cell's sysbench output and
    reads it back into per-second values (when the cell ends, and again when a ledger is
    rebuilt from the raw files)."""

    name: str
    watches_cells: ClassVar[bool] = False  # started before each cell, stopped after it
    has_series: ClassVar[bool] = True  # prints values each second (a profile does not)
    raw_suffix: ClassVar[str] = "txt"
    # How long after sysbench ends it still needs for the run's last second.
    tail_seconds: ClassVar[float] = SAMPLER_TAIL_SECONDS
    # Series stored even when zero the whole cell (other series are then left out).
    levels: ClassVar[frozenset[str]] = frozenset()

    def raw_file(self, stem: Path) -> Path:
        return beside(stem, self.name, self.raw_suffix)

    def read(self, path: Path, clock: TelemetryClock) -> list[tuple[int, Values]]:
        """The raw file's values by second of the sysbench clock."""
        return []

    def after_session(self, server: Server, stem: Path) -> str | None:
        """Once per session, after its cells, the engine still running and warm; what could
        not be taken, if anything."""
        return None

    def start(self, site: CellSite, reference: float) -> bool:
        """Before sysbench; False when the device cannot run here (it is then left out).
        Times it records relative to `reference` lie `clock.started_after` seconds from
        sysbench's start, which `read` adds."""
        return False

    def has_sampled(self, until: float) -> bool:
        """Whether its raw file already covers the run up to `until` (a time.time()): by
        default once its tail has passed."""
        return time.time() >= until + self.tail_seconds

    def stop(self) -> str | None:
        """After sysbench (or on an interrupt); why it stopped early, if it did."""
        return None

    def error(self) -> str | None:
        """A failure that lost the whole series (no samples at all)."""
        return None


class OsTool(Device):
    """An OS tool (iostat, vmstat, mpstat) run where the engine runs, printing each second."""

    watches_cells = True
    tail_seconds = TOOL_TAIL_SECONDS

    def __init__(self, name: str, command: list[str], parser: Parser) -> None:
        self.name = name
        self._command = command
        self._parser = parser
        self._process: subprocess.Popen[bytes] | None = None
        self._raw, self._spawned = Path(), 0.0
        self._installed: dict[Host, bool] = {}  # asked once per host, not before every cell

    def start(self, site: CellSite, reference: float) -> bool:
        machine: Host = site.server.machine
        if machine not in self._installed:
            self._installed[machine] = machine.has(self._command[0])
        if not self._installed[machine]:
            return False
        self._raw = self.raw_file(site.stem)
        with self._raw.open("wb") as sink:
            self._process = machine.spawn(PLAIN_OUTPUT + self._command, stdout=sink)
        self._spawned = time.time()
        return True

    def has_sampled(self, until: float) -> bool:
        """Whether it printed the sample taken over the second before `until`: its k-th
        sample comes about k seconds after it started (a report since boot, printed at
        once, is no sample). Waiting for that line rather than a fixed tail saves most of
        a second per cell; the tail stays the limit."""
        wanted = math.floor(until - self._spawned) + 1
        return len(self._parser(self._raw.read_text(errors="replace"))) >= wanted

    def stop(self) -> str | None:
        if self._process is None:
            return None
        code = self._process.poll()
        terminate(self._process, 2)
        self._process = None
        if code is None:
            return None
        how = f"signal {-code}" if code < 0 else f"code {code}"
        return f"{self.name} exited during the cell ({how})"

    def read(self, path: Path, clock: TelemetryClock) -> list[tuple[int, Values]]:
        # The tools print their own clock: aligned to sysbench's by the time of day.
        text = path.read_text(errors="replace")
        return align(self._parser(text), clock.start_clock, clock.started_after)


class EngineCounters(Device):
    """The engine's own counters, sampled each second on one extra connection."""

    name = metrics.ENGINE
    watches_cells = True
    raw_suffix = "jsonl"
    levels = ENGINE_LEVELS

    def __init__(self) -> None:
        self._probe: EngineProbe | None = None

    def start(self, site: CellSite, reference: float) -> bool:
        server = site.server
        path = self.raw_file(site.stem)
        self._probe = EngineProbe(lambda: server.control(BENCHMARK_DATABASE), path, reference)
        self._probe.start()
        return True

    def stop(self) -> str | None:
        if self._probe is not None:
            self._probe.stop()
        return None

    def error(self) -> str | None:
        return f"engine probe: {self._probe.error}" if self._probe and self._probe.error else None

    def read(self, path: Path, clock: TelemetryClock) -> list[tuple[int, Values]]:
        return engine_series(read_samples(path), clock.started_after)


class ProcessLoad(Device):
    """What the server, sysbench and everything else used of the machine, each second. It
    runs with telemetry on or off: the per-transaction cost and the interference it sees are
    part of the measurement."""

    name = metrics.LOAD
    watches_cells = True
    raw_suffix = "jsonl"
    levels = frozenset({metrics.OTHER_CPU.name, metrics.RUN_QUEUE.name})

    def __init__(self) -> None:
        self._sampler: LoadSampler | None = None

    def start(self, site: CellSite, reference: float) -> bool:
        if not site.server.machine.is_local:
            return False  # /proc here says nothing of a server on another host
        path = self.raw_file(site.stem)
        self._sampler = LoadSampler(site.server.server_pid(), path, reference)
        self._sampler.start()
        return True

    def stop(self) -> str | None:
        if self._sampler is not None:
            self._sampler.stop()
        return None

    def error(self) -> str | None:
        found = self._sampler.error if self._sampler else None
        return f"load sampler: {found}" if found else None

    def read(self, path: Path, clock: TelemetryClock) -> list[tuple[int, Values]]:
        return load_series(read_lines(path), clock.started_after)


class EngineSummary(Device):
    """pt-mysql-summary of the warm engine, once per session."""

    name = "pt-mysql-summary"

    def after_session(self, server: Server, stem: Path) -> str | None:
        return engine_summary(server, beside(stem, self.name))


@dataclass
class Telemetry:
    """The devices of a run, and the hooks the runner calls; with no devices (telemetry
    off) every hook does nothing."""

    devices: list[Device] = field(default_factory=list)
    _running: list[Device] = field(default_factory=list)
    _absent: list[str] = field(default_factory=list)
    _site: CellSite | None = None
    _started = 0.0

    @property
    def describes_sessions(self) -> bool:
        """Whether a device takes something of the warm engine after a session's cells."""
        return any(not d.watches_cells for d in self.devices)

    def after_session(self, server: Server, stem: Path) -> list[str]:
        """What the session-level devices could not take."""
        return [m for d in self.devices if (m := d.after_session(server, stem)) is not None]

    def before_cell(self, site: CellSite) -> None:
        # The samplers count from here; sysbench, launched once they all run, starts later
        # (0.02-0.03 s here idle, 0.13 s under six CPU hogs, more while perf attaches to
        # profile the cell), which after_cell measures.
        self._site, self._running, self._absent = site, [], []
        self._started = time.time()
        for device in self.devices:
            if not device.watches_cells:
                continue
            if device.start(site, self._started):
                self._running.append(device)
            else:
                self._absent.append(device.name)

    def raw_file_of(self, name: str) -> Path | None:
        """The raw file a device watching the current cell is writing, if it runs."""
        running = [d for d in self._running if d.name == name]
        return running[0].raw_file(self._site.stem) if running and self._site else None

    def abandon(self) -> None:
        """An interrupted cell: stop everything, keep nothing."""
        for device in self._running:
            device.stop()
        self._running = []

    def after_cell(self, duration: float, launched: float) -> Collected:
        """Wait for the run's last second to be sampled, stop, and read what was collected
        on the clock of the sysbench launched at `launched` (a time.time())."""
        if self._site is None:
            return Collected()
        end = launched + duration
        tail = max((d.tail_seconds for d in self._running), default=0.0)
        while time.time() < end + tail and not all(d.has_sampled(end) for d in self._running):
            time.sleep(POLL_SECONDS)
        # A tool prints a sample as several lines (mpstat: one per CPU): let it finish.
        time.sleep(POLL_SECONDS)
        exits = {d.name: note for d in self._running if (note := d.stop()) is not None}
        seconds = round(duration)
        clock = TelemetryClock(
            seconds_of_day(launched),
            self._started - launched,
            seconds,
            tuple(d.name for d in self._running),
        )
        collected = Collected(clock=clock)
        collected.notes += [f"{name} not installed" for name in self._absent]
        for device in self._running:
            if (error := device.error()) is not None:
                collected.missing(error)
            if not device.has_series:
                if device.name in exits:
                    collected.missing(exits[device.name])
                continue
            series = within_run(device.read(device.raw_file(self._site.stem), clock), clock)
            collected.rows += to_rows(device.name, series, device.levels)
            lost = missing_seconds({second for second, _ in series}, seconds)
            if lost or device.name in exits:
                gap = f"no samples for {describe_seconds(lost)}" if lost else ""
                reason = exits.get(device.name, "")
                collected.missing(f"{device.name}: " + "; ".join(filter(None, [gap, reason])))
        self._running, self._site = [], None
        return collected
