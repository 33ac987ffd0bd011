"""A telemetry device is one class and one registration: a test device, registered here
only, samples the machine's uptime each second and goes through the same hooks, raw file
and rebuild path as the built-in ones; `--telemetry` chooses devices by name."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from oltplab.base.errors import OltplabError
from oltplab.telemetry import registry
from oltplab.telemetry.collectors import TelemetryClock
from oltplab.telemetry.devices import CellSite, Device, Telemetry
from oltplab.telemetry.parsers import Values
from oltplab.telemetry.sampler import EverySecond, read_lines


class _UptimeSampler(EverySecond):
    def run(self) -> None:
        with self.output.open("w") as sink:
            for second in self.seconds():
                uptime = float(Path("/proc/uptime").read_text().split()[0])
                sink.write(json.dumps({"t": second, "uptime": uptime}) + "\n")
                sink.flush()


class Uptime(Device):
    """The machine's uptime each second: a device that needs nothing but /proc."""

    name = "uptime"
    watches_cells = True
    raw_suffix = "jsonl"

    def start(self, site: CellSite, reference: float) -> bool:
        self._sampler = _UptimeSampler(self.name, self.raw_file(site.stem), reference)
        self._sampler.start()
        return True

    def stop(self) -> str | None:
        self._sampler.stop()
        return None

    def read(self, path: Path, clock: TelemetryClock) -> list[tuple[int, Values]]:
        # Its times count from `reference`, which the clock places against sysbench's start.
        return [
            (round(s["t"] + clock.started_after), {"seconds": s["uptime"]})
            for s in read_lines(path)
        ]


registry.register(Uptime.name, Uptime, default=False, what="the machine's uptime (a test)")


def test_a_device_registered_in_one_line_is_collected_and_read_back(tmp_path: Path) -> None:
    names = registry.chosen("none,uptime")
    assert names == ("uptime",)
    telemetry = Telemetry(registry.devices(names)[1:])  # without the load sampler's server
    stem = tmp_path / "Tier1G_RO_1th"
    # This device watches no server; a cell's site still names one.
    telemetry.before_cell(CellSite(stem, server=None))  # type: ignore[arg-type]
    collected = telemetry.after_cell(3.0, launched=time.time())
    assert collected.notes == [] and not collected.gap
    assert collected.clock is not None and collected.clock.sources == ("uptime",)
    seconds = [second for source, metric, second, _ in collected.rows]
    assert {source for source, *_ in collected.rows} == {"uptime"} and {1, 2, 3} <= set(seconds)
    values = [value for *_, value in collected.rows]
    assert values == sorted(values)  # uptime only grows
    assert (tmp_path / "Tier1G_RO_1th.uptime.jsonl").is_file()
    # A ledger rebuilt from the raw files reads the same rows, with the same class.
    assert registry.telemetry_rows(stem, collected.clock) == collected.rows


def test_devices_are_chosen_by_name() -> None:
    defaults = registry.default_names()
    assert defaults == ("iostat", "vmstat", "mpstat", "engine", "pt-mysql-summary")
    assert registry.chosen("default") == defaults
    assert registry.chosen("default,perf") == (*defaults, "perf")
    assert registry.chosen("none") == ()
    assert registry.chosen("vmstat,vmstat,engine") == ("vmstat", "engine")
    # The engine summary left out, the rest of the defaults kept (issue 59).
    assert registry.chosen("default,-pt-mysql-summary") == defaults[:-1]
    assert [d.name for d in registry.devices(("vmstat",))] == ["load", "vmstat"]
    assert registry.recorded(True) == defaults and registry.recorded(False) == ()
    assert registry.recorded(["engine"]) == ("engine",)
    with pytest.raises(OltplabError, match=r"--telemetry iostat,dstat: no device 'dstat' \("):
        registry.chosen("iostat,dstat")
    with pytest.raises(OltplabError, match=r"no device 'dstat'"):
        registry.chosen("default,-dstat")
