"""A time-sliced cell's figures come from its own slices (measure/gates/sliced.lua)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from oltplab.sysbench.output import SAMPLE_COLUMNS
from oltplab.sysbench.reading import read_output
from oltplab.sysbench.slices import parse_slices, sliced_output
from oltplab.sysbench.validity import validity_flags

# Four threads in slot 0 of 4 one-second slots, 10 slots of its own; the process ran into
# slice 40, past its last whole one.
RECORDED = Path(__file__).parent.parent / "data" / "sysbench" / "sliced_4threads_slot0_of_4.txt"
OWN = {4 * k for k in range(10)}


def test_slices_sum_the_threads_and_keep_only_the_cell_s_whole_slices() -> None:
    slices = parse_slices(RECORDED.read_text(), OWN, ticks_per_second=100)
    assert set(slices.events) == OWN
    assert slices.events[0] == 566 + 506 + 597 + 590
    assert sum(slices.events.values()) == 25_558  # slice 40's events left out
    # the server's CPU from the first thread's readings: 148 ticks in slice 0
    assert slices.server_cpu_s[0] == 1.48


def test_a_sliced_cell_s_samples_are_its_slices_and_its_rate_is_over_its_own_time() -> None:
    parsed = read_output(RECORDED)
    slices = parse_slices(RECORDED.read_text(), OWN, ticks_per_second=100)
    cell = sliced_output(parsed, slices, slice_seconds=1)
    assert cell.summary is not None
    assert cell.summary.transactions == 25_558
    assert cell.summary.total_time_s == 10
    assert cell.summary.tps == 2_555.8  # not sysbench's 664 tps over the 42 s it waited through
    tps = cell.samples[:, SAMPLE_COLUMNS.index("tps")]
    assert list(cell.samples[:, 0]) == list(range(1, 11))
    assert tps[0] == 2_259 and sum(tps) == 25_558
    # 16 queries a transaction in oltp_read_only, as the summary counts them
    assert cell.samples[0, SAMPLE_COLUMNS.index("qps")] == 2_259 * 16
    # latency is not known: sysbench's clock counted the waits between slots
    assert math.isnan(cell.summary.lat_pct_ms) and cell.histogram == ()
    assert validity_flags(cell, seconds=10, interval=1) == []


def test_slots_shorter_than_a_second_give_rates_over_their_own_length() -> None:
    parsed = read_output(RECORDED)
    slices = parse_slices(RECORDED.read_text(), OWN, ticks_per_second=100)
    cell = sliced_output(parsed, slices, slice_seconds=0.25)
    assert cell.summary is not None and cell.interval == 0.25
    assert cell.summary.total_time_s == 2.5
    assert cell.summary.tps == 25_558 / 2.5
    assert cell.samples[0, SAMPLE_COLUMNS.index("tps")] == 2_259 * 4
    # ten slices of a quarter second are all the samples 2.5 s of slots give: none missing
    assert validity_flags(cell, seconds=2.5, interval=0.25) == []
    # one slice lost from the middle is a gap
    lost = replace(cell, samples=np.delete(cell.samples, 4, axis=0),
                   seconds=np.delete(cell.seconds, 4), tps=np.delete(cell.tps, 4))  # fmt: skip
    assert validity_flags(lost, seconds=2.5, interval=0.25) == ["missing-intervals"]


def test_a_sliced_output_that_states_its_slots_reads_as_its_run_recorded_it(
    tmp_path: Path,
) -> None:
    """The output alone says which slices were the cell's (its SLOTS line), so that
    rebuild and import read the figures its run recorded, not sysbench's over the waits."""
    stated = tmp_path / "cell.txt"
    stated.write_text(RECORDED.read_text() + "SLOTS 0 4 10 1000\n")
    cell = read_output(stated)
    assert cell.summary is not None
    assert (cell.summary.transactions, cell.summary.tps) == (25_558, 2_555.8)
    as_run = sliced_output(
        read_output(RECORDED), parse_slices(RECORDED.read_text(), OWN, 100), slice_seconds=1
    )
    assert np.array_equal(cell.samples, as_run.samples, equal_nan=True)
    # An output of before the SLOTS line reads as sysbench printed it.
    assert read_output(RECORDED).summary.transactions != 25_558  # type: ignore[union-attr]
