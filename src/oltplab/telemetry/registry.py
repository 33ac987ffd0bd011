"""Telemetry devices by name. A device is one class (telemetry/devices.py, or a module of
its own) and one `register` line below; `oltplab run --telemetry NAME,...` chooses among
them, and a ledger rebuilt from raw files reads each device's files with the same class.

The load sampler always runs, whatever is chosen: the server's CPU per transaction and the
interference other processes cause are part of the measurement, not an extra.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from oltplab.base import metrics
from oltplab.base.errors import OltplabError
from oltplab.telemetry.collectors import Row, TelemetryClock, to_rows, within_run
from oltplab.telemetry.devices import Device, EngineCounters, EngineSummary, OsTool, ProcessLoad
from oltplab.telemetry.parsers import PARSERS
from oltplab.telemetry.profiler import Profiler

DEFAULT = "default"
NONE = "none"
PROFILE = Profiler.name


@dataclass(frozen=True)
class Registered:
    make: Callable[[], Device]
    default: bool  # chosen when nothing is said
    what: str  # one line for --help


_DEVICES: dict[str, Registered] = {}


def register(name: str, make: Callable[[], Device], *, default: bool, what: str) -> None:
    _DEVICES[name] = Registered(make, default, what)


def default_names() -> tuple[str, ...]:
    return tuple(name for name, found in _DEVICES.items() if found.default)


def described() -> str:
    """Every device that can be chosen, for --help."""
    return "; ".join(
        f"{name}{' (default)' if found.default else ''}: {found.what}"
        for name, found in _DEVICES.items()
    )


def chosen(text: str) -> tuple[str, ...]:
    """`--telemetry`: names separated by commas; `default` stands for the default devices
    (so `default,profile` adds the profiler), `none` for none at all, and `-NAME` leaves a
    device out of those named before it (`default,-pt-mysql-summary`)."""
    names: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        name = part.removeprefix("-")
        if not part or part == NONE:
            continue
        if part == DEFAULT:
            names += default_names()
        elif name not in _DEVICES:
            known = ", ".join([DEFAULT, NONE, *_DEVICES])
            raise OltplabError(f"--telemetry {text}: no device {name!r} (known: {known})")
        elif part.startswith("-"):
            names = [n for n in names if n != name]
        else:
            names.append(name)
    return tuple(dict.fromkeys(names))


def recorded(value: bool | list[str]) -> tuple[str, ...]:
    """The devices a run.json names; files from before the names were kept say on or off."""
    if isinstance(value, bool):
        return default_names() if value else ()
    return tuple(value)


def devices(names: Iterable[str]) -> list[Device]:
    """The load sampler, then the named devices, each a new instance for this run."""
    return [ProcessLoad(), *(_DEVICES[name].make() for name in names)]


def telemetry_rows(stem: Path, clock: TelemetryClock) -> list[Row]:
    """Every series a cell's raw telemetry files hold, as ledger rows, read by the device
    that wrote each (a source no device reads any more, dstat in older results, is left)."""
    readers = {device.name: device for device in devices(_DEVICES)}
    return [
        row
        for source in clock.sources
        if (device := readers.get(source)) is not None and device.has_series
        for row in to_rows(
            source, within_run(device.read(device.raw_file(stem), clock), clock), device.levels
        )
    ]


# The OS tools: each prints its own clock and is read by its parser.
OS_TOOLS = {
    metrics.IOSTAT: (["iostat", "-dxm", "-t", "1"], "disk throughput, IOPS, queue, utilisation"),
    metrics.VMSTAT: (["vmstat", "-n", "-t", "1"], "run queue, memory, swap, context switches"),
    metrics.MPSTAT: (["mpstat", "-P", "ALL", "1"], "CPU use by kind, per CPU"),
}
for tool, (command, what) in OS_TOOLS.items():
    register(
        tool,
        partial(OsTool, tool, command, PARSERS[tool]),
        default=True,
        what=f"{what} each second",
    )
register(
    metrics.ENGINE,
    EngineCounters,
    default=True,
    what="the engine's own counters on one extra connection each second",
)
register(
    EngineSummary.name,
    EngineSummary,
    default=True,
    what="pt-mysql-summary of the warm engine once per session",
)
register(
    Profiler.name,
    Profiler,
    default=False,
    what="perf record of the server on-CPU in every measured cell (flame graphs; bisect --explain)",
)
