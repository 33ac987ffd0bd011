"""The load sampler: what the server, sysbench and everything else used each second, and
when other load disturbed a cell's steady seconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oltplab.base import metrics
from oltplab.telemetry.load import (
    DISTURBED_CPU,
    LoadSampler,
    host_ticks,
    interference,
    load_series,
)
from oltplab.telemetry.sampler import read_lines

TICKS = os.sysconf("SC_CLK_TCK")

PROC_STAT = """cpu  8385 10 3578 35509 301 5 86 14 0 0
cpu0 4000 5 1700 17000 150 2 40 7 0 0
intr 123
ctxt 456
procs_running 3
procs_blocked 0
"""


def test_host_ticks_reads_busy_steal_and_the_run_queue() -> None:
    found = host_ticks(PROC_STAT)
    assert found.busy == 8385 + 10 + 3578 + 5 + 86
    assert found.steal == 14
    assert found.running == 3


def test_series_are_cpus_per_second_and_other_is_what_is_not_ours(tmp_path: Path) -> None:
    raw = tmp_path / "cell.load.jsonl"
    samples = [
        {"t": 0.0, "busy": 0, "steal": 0, "running": 1, "ours": 0, "sysbench": 0,
         "server": 0, "server_switches": 0},
        # A second: 1.5 CPUs busy, of which ours 1.2 (server 0.8, sysbench 0.3).
        {"t": 1.0, "busy": 1.5 * TICKS, "steal": 0.1 * TICKS, "running": 4, "ours": 1.2 * TICKS,
         "sysbench": 0.3 * TICKS, "server": 0.8 * TICKS, "server_switches": 2500},
    ]  # fmt: skip
    raw.write_text("".join(json.dumps(s) + "\n" for s in samples) + '{"t": 2.0, "bu')
    series = load_series(read_lines(raw))
    assert [second for second, _ in series] == [1]
    values = series[0][1]
    assert values[metrics.SERVER_CPU.name] == pytest.approx(0.8)
    assert values[metrics.SYSBENCH_CPU.name] == pytest.approx(0.3)
    assert values[metrics.OTHER_CPU.name] == pytest.approx(0.3)
    assert values[metrics.STEAL.name] == pytest.approx(0.1)
    assert values[metrics.RUN_QUEUE.name] == 4
    assert values[metrics.SERVER_SWITCHES.name] == pytest.approx(2500)


def test_a_cell_is_disturbed_when_other_load_covers_a_tenth_of_its_steady_part() -> None:
    quiet = dict.fromkeys(range(1, 41), 0.02)
    assert not interference(quiet, {}, 6, 40).flagged  # type: ignore[union-attr]
    busy = {**quiet, **dict.fromkeys(range(20, 26), 0.9)}  # 6 of 35 steady seconds
    found = interference(busy, {}, 6, 40)
    assert found is not None and found.flagged
    assert found.disturbed == 6 and found.steady == 35
    assert "interference 6 of 35 steady s" in found.note()
    # Disturbed seconds in the warm-up are not the steady part's.
    assert not interference(busy, {}, 30, 40).flagged  # type: ignore[union-attr]
    # Steal counts as other load.
    stolen = interference(quiet, dict.fromkeys(range(10, 20), DISTURBED_CPU), 6, 40)
    assert stolen is not None and stolen.flagged
    assert interference({}, {}, 1, 10) is None


def test_the_sampler_sees_a_busy_process_that_is_not_ours(tmp_path: Path) -> None:
    """A process started outside oltplab's tree (by setsid from a shell that exits) that
    burns a CPU shows up as other load; a sleeping server as no CPU."""
    burn = "import time\nt = time.time()\nwhile time.time() - t < 4: pass\n"
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(8)"])
    outsider = subprocess.Popen(
        ["sh", "-c", f"setsid {sys.executable} -c '{burn}' >/dev/null 2>&1 < /dev/null &"]
    )
    outsider.wait()  # its child is reparented away from us: not in our tree
    raw = tmp_path / "load.jsonl"
    sampler = LoadSampler(server.pid, raw, time.time())
    try:
        sampler.start()
        time.sleep(3.2)
        sampler.stop()
    finally:
        server.kill()
        server.wait()
    series = dict(load_series(read_lines(raw)))
    assert sampler.error is None
    assert len(series) >= 2
    other = [values[metrics.OTHER_CPU.name] for values in series.values()]
    assert max(other) > 0.6
    assert all(values[metrics.SERVER_CPU.name] < 0.1 for values in series.values())
