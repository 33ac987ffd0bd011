"""Telemetry parsers on recorded outputs of each tool (several locales), alignment to the
sysbench clock, and the engine probe's series."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from oltplab.base import metrics
from oltplab.telemetry.collectors import describe_seconds, missing_seconds, to_rows
from oltplab.telemetry.devices import EngineCounters
from oltplab.telemetry.engine import checkpoint_age, engine_series, read_samples
from oltplab.telemetry.load import process_figures
from oltplab.telemetry.parsers import (
    Sample,
    align,
    parse_clock,
    parse_iostat,
    parse_mpstat,
    parse_number,
    parse_vmstat,
)

DATA = Path(__file__).parent.parent / "data" / "telemetry"
# The recordings were made together, under load, from 02:53:03 (C / 24 h times).
FIRST = 2 * 3600 + 53 * 60 + 4


def read(name: str) -> str:
    return (DATA / name).read_text()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("02:53:04", 10384.0),
        ("02:53:04 AM", 10384.0),
        ("12:00:01 AM", 1.0),
        ("12:30:00 PM", 45000.0),
        ("01:02:03 pm", 46923.0),
        ("11:59:59 p.m.", 86399.0),
        ("22.11.2026 14:05:06", 50706.0),
        ("2026-11-22T02:53:04+0000", 10384.0),
        ("Average:", None),
    ],
)
def test_clock_in_12_and_24_hour_forms(text: str, expected: float | None) -> None:
    assert parse_clock(text) == expected


def test_numbers_with_decimal_commas() -> None:
    assert parse_number("75,57") == 75.57
    assert parse_number("75.57") == 75.57
    assert parse_number("vda") is None


@pytest.mark.parametrize("locale", ["C", "de_DE", "en_US"])
def test_iostat_drops_the_since_boot_report(locale: str) -> None:
    samples = parse_iostat(read(f"iostat.{locale}.txt"))
    assert [s.clock for s in samples] == [FIRST, FIRST + 1, FIRST + 2]
    assert samples[0].values["vda:wMB/s"] == 300.0
    assert len(samples[0].values) == 22  # every extended column of the one device


def test_iostat_locales_read_the_same_numbers() -> None:
    german = parse_iostat(read("iostat.de_DE.txt"))
    english = parse_iostat(read("iostat.en_US.txt"))
    assert german[0].values.keys() == english[0].values.keys()
    assert german[0].values["vda:w/s"] > 100  # a decimal comma is not a thousands mark


def test_vmstat_with_timestamps() -> None:
    samples = parse_vmstat(read("vmstat.C.txt"))
    assert [s.clock for s in samples] == [FIRST, FIRST + 1, FIRST + 2]
    assert samples[0].values["bo"] == 302080.0
    assert samples[0].values["cs"] == 1435.0
    assert "UTC" not in samples[0].values


@pytest.mark.parametrize("locale", ["C", "de_DE", "en_US"])
def test_mpstat_in_24_hour_12_hour_and_decimal_comma_forms(locale: str) -> None:
    samples = parse_mpstat(read(f"mpstat.{locale}.txt"))
    # Four one-second reports; the "Average" (or "Durchschn.") block is not one of them.
    assert [s.clock for s in samples] == [FIRST, FIRST + 1, FIRST + 2, FIRST + 3]
    assert set(samples[0].values) >= {"all:%usr", "0:%usr", "1:%idle"}
    assert len(samples[0].values) == 30
    assert samples[0].values["all:%usr"] == pytest.approx(50.4, abs=0.2)


def test_mpstat_12_hour_times_after_noon() -> None:
    text = read("mpstat.en_US.txt").replace("02:53:0", "01:53:0").replace(" AM ", " PM ")
    assert parse_mpstat(text)[0].clock == 13 * 3600 + 53 * 60 + 4


def test_alignment_places_samples_on_the_sysbench_clock() -> None:
    samples = parse_vmstat(read("vmstat.C.txt"))
    # sysbench started 0.4 s after 02:53:03: the sample printed at :04 is its first second.
    placed = align(samples, start_clock=FIRST - 1 + 0.4)
    assert [second for second, _ in placed] == [1, 2, 3]
    # Without printed times, samples are placed one a second from the collector's start.
    timeless = [Sample(None, s.values) for s in samples]
    untimed = align(timeless, start_clock=0, started_after=-0.1)
    assert [second for second, _ in untimed] == [1, 2, 3]


def test_alignment_keeps_one_sample_a_second_despite_drift_and_follows_stalls() -> None:
    def clocked(*clocks: float) -> list[Sample]:
        return [Sample(c, {"x": c}) for c in clocks]

    # Drift makes the printed times skip a second (12 -> 14) while samples came 1 s apart.
    drifting = align(clocked(10, 11, 12, 14, 15), start_clock=9.2)
    assert [second for second, _ in drifting] == [1, 2, 3, 4, 5]
    # A collector that stalled for 5 s: its samples after the stall keep their own times.
    stalled = align(clocked(10, 11, 12, 18, 19), start_clock=9.2)
    assert [second for second, _ in stalled] == [1, 2, 3, 9, 10]


def test_alignment_across_midnight() -> None:
    samples = parse_mpstat(read("mpstat.C.txt").replace("02:53:0", "00:00:0"))
    placed = align(samples, start_clock=86399.4)  # sysbench started at 23:59:59.4
    assert [second for second, _ in placed] == [5, 6, 7, 8]


def test_zero_series_are_not_stored_and_gaps_are_found() -> None:
    rows = to_rows("vmstat", [(1, {"us": 3.0, "si": 0.0}), (2, {"us": 0.0, "si": 0.0})])
    assert rows == [("vmstat", "us", 1, 3.0), ("vmstat", "us", 2, 0.0)]
    assert missing_seconds({1, 2, 3, 4, 9, 10}, 10) == [5, 6, 7, 8]
    assert missing_seconds({2, 3, 4, 5, 6, 7, 8, 9}, 10) == []
    assert describe_seconds([5, 6, 7, 8]) == "5-8 s"


def test_an_engine_level_at_zero_throughout_is_stored() -> None:
    # One sysbench thread between statements at every sample: nothing was running, which
    # the timeline must draw, not leave out as if the probe had not looked.
    series = [(1, {"Threads_running": 0.0, "Com_delete": 0.0}), (2, {"Threads_running": 0.0})]
    rows = to_rows(metrics.ENGINE, series, EngineCounters.levels)
    assert rows == [("engine", "Threads_running", 1, 0.0), ("engine", "Threads_running", 2, 0.0)]


def test_engine_series_rates_levels_and_older_results_server_cpu(tmp_path: Path) -> None:
    raw = tmp_path / "cell.engine.jsonl"
    lines = [
        {
            "t": 0.01,
            "status": {"Com_commit": 100, "Threads_running": 1, "Innodb_os_log_written": 0},
            "derived": {"trx_rseg_history_len": 5, "cpu_seconds": 10.0, "checkpoint_age": 7},
        },
        # Only what changed is written; history length and checkpoint age stayed.
        {
            "t": 1.01,
            "status": {"Com_commit": 600, "Threads_running": 4, "Innodb_os_log_written": 5000},
            "derived": {"cpu_seconds": 10.5},
        },
        {"t": 2.02, "status": {"Com_commit": 1100}, "derived": {"cpu_seconds": 11.0}},
    ]
    raw.write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"t": 3.0, "sta')
    series = engine_series(read_samples(raw))
    assert [second for second, _ in series] == [1, 2]
    first = series[0][1]
    assert first["Com_commit"] == pytest.approx(500)
    assert first["Innodb_os_log_written"] == pytest.approx(5000)
    assert first["Threads_running"] == 3  # without the probe's own query
    assert first["history_list_length"] == 5
    assert first["checkpoint_age"] == 7
    assert first["server_cpu_seconds"] == pytest.approx(0.5)
    assert series[1][1]["server_cpu_seconds"] == pytest.approx(0.5 / 1.01)
    assert series[1][1]["Com_commit"] == pytest.approx(500 / 1.01)


def test_checkpoint_age_from_each_engine_family() -> None:
    assert checkpoint_age({"Innodb_checkpoint_age": 19446.0}, None) == 19446.0
    mysql_80 = {"Innodb_redo_log_current_lsn": 19841058.0, "Innodb_redo_log_checkpoint_lsn": 1e7}
    assert checkpoint_age(mysql_80, None) == 9841058.0
    innodb_status = "---\nLOG\n---\nLog sequence number 2559045\nLast checkpoint at  2558000\n"
    assert checkpoint_age({}, innodb_status) == 1045.0
    assert checkpoint_age({}, None) is None


def test_server_cpu_counts_child_processes_as_postgresql_has_them():
    # The parent only waits; its child burns half a second of CPU, says so, then sleeps.
    burn = (
        "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass\n"
        "print(flush=True)\ntime.sleep(3)\n"
    )
    parent = subprocess.Popen(
        ["sh", "-c", f"{sys.executable} -c '{burn}' & wait"], stdout=subprocess.PIPE
    )
    try:
        assert parent.stdout is not None
        parent.stdout.readline()
        figures = process_figures(parent.pid)
        assert figures["cpu_seconds"] >= 0.45
        assert figures["switches"] >= 1
    finally:
        parent.communicate()
