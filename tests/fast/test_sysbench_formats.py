"""Real outputs of every sysbench format of the last decade parse to the figures their own
summaries print (tests/data/sysbench/formats/README.md says where each comes from)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from oltplab.analysis.latency import Histogram
from oltplab.sysbench.output import parse_output
from oltplab.sysbench.reading import read_output
from oltplab.sysbench.validity import suspect_flags, validity_flags

FORMATS = Path(__file__).parent.parent / "data" / "sysbench" / "formats"

# file: (version, threads, interval, lines, tps, seconds, percentile, latency at it,
#        average latency, errors)
PRINTED = {
    "v0.4_ro_128th.txt": ("0.4.12", 128, None, 0, 34905.05, 60.0037, 95, 7.53, 3.66, 0),
    "v0.5_old_rw_64th_10s_p99.txt": ("0.5", 64, 10, 30, 4244.52, 300.008, 99, 50.75, 15.07, 0),
    "v0.5_new_ro_256th_2s.txt": ("0.5", 256, 2, 25, 12019.45, 51.0125, 95, 44.57, 21.27, 0),
    "v1.0_ro_2th_10s.txt": ("1.0.20", 2, 10, 2, 2642.88, 30.0032, 95, 1.14, 0.76, 0),
    "v1.0_ro_2th_no_intervals.txt": ("1.0.20", 2, None, 0, 2833.20, 12.0016, 95, 1.04, 0.70, 0),
    "v1.0_rw_2th_histogram_p99.txt": ("1.0.20", 2, 1, 12, 714.91, 12.004, 99, 4.18, 2.80, 0),
    "v1.1_update_index_64th_5s.txt": (
        "1.1.0-df89d34", 64, 5, 12, 13782.32, 60.0093, 95, 7.98, 4.64, 5,
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(PRINTED))
def test_each_format_gives_what_its_summary_prints(name: str) -> None:
    version, threads, interval, lines, tps, seconds, pct, at_pct, avg, errors = PRINTED[name]
    out = read_output(FORMATS / name)
    summary = out.summary
    assert summary is not None and out.failure is None
    assert (out.version, out.threads, out.interval, len(out.samples)) == (
        version, threads, interval, lines,
    )  # fmt: skip
    assert (summary.tps, summary.total_time_s, summary.errors) == (tps, seconds, errors)
    assert (summary.percentile, summary.lat_pct_ms, summary.lat_avg_ms) == (pct, at_pct, avg)
    assert summary.interval_s == interval
    # the total of queries is what every version counts: reads + writes + other
    assert summary.queries == summary.reads + summary.writes + summary.other
    assert summary.qps == pytest.approx(summary.queries / seconds, rel=1e-3)
    # complete runs at any interval, or none, are valid: no flag but what they counted
    assert validity_flags(out, None) == (["errors"] if errors else [])
    if lines:
        # the interval lines agree with the summary (within a warm-up's worth)
        assert np.mean(out.samples[:, 2]) == pytest.approx(tps, rel=0.06)


def test_the_older_summaries_read_their_own_words() -> None:
    zero_four = read_output(FORMATS / "v0.4_ro_128th.txt").summary
    assert zero_four is not None
    # "per-request statistics" in ms with units; deadlocks stand where ignored errors do
    assert (zero_four.lat_min_ms, zero_four.lat_max_ms) == (1.30, 27.52)
    assert zero_four.transactions == zero_four.events == 2094433
    old = read_output(FORMATS / "v0.5_old_rw_64th_10s_p99.txt")
    first = old.intervals[0]
    # 0.5 prints reads/s and writes/s: qps is their sum, latency at 99% as printed
    assert (first.second, first.tps, first.reads_per_s, first.writes_per_s) == (
        10.0, 4302.27, 60315.69, 17219.18,
    )  # fmt: skip
    assert (first.qps, first.lat_pct_ms, first.errors_per_s) == (60315.69 + 17219.18, 55.01, 0)
    new = read_output(FORMATS / "v0.5_new_ro_256th_2s.txt").intervals
    assert (new[0].second, new[-1].second, new[0].reads_per_s) == (2.0, 50.0, 116521.09)


def test_the_histogram_counts_every_event() -> None:
    out = read_output(FORMATS / "v1.0_rw_2th_histogram_p99.txt")
    assert out.summary is not None
    assert sum(count for _, count in out.histogram) == out.summary.events == 8582
    values = [value for value, _ in out.histogram]
    assert values == sorted(values) and values[0] == 1.044
    assert out.summary.lat_min_ms <= values[0] and values[-1] <= out.summary.lat_max_ms * 1.02


def test_buckets_that_print_alike_are_summed() -> None:
    # Below 0.1 ms neighbouring buckets print the same 3-decimal value: 3,500 events of
    # which 10 are planted 1.1 s stalls, so the 99th percentile is far below the stall.
    out = read_output(FORMATS / "v1.0_stall_1th_histogram_submillisecond.txt")
    assert out.summary is not None
    assert sum(count for _, count in out.histogram) == out.summary.events == 3500
    values = [value for value, _ in out.histogram]
    assert len(values) == len(set(values))
    assert Histogram.of(out.histogram).percentile(99) < 1


def test_a_fatal_line_is_the_reason() -> None:
    out = read_output(FORMATS / "v1.0_ro_16th_fatal.txt")
    assert out.summary is None
    # the server's own error, not the first of sysbench's lines about it
    assert out.failure == "sysbench said: FATAL: error 1040: Too many connections"


def test_errors_count_only_above_the_limit() -> None:
    out = read_output(FORMATS / "v1.1_update_index_64th_5s.txt")
    assert out.summary is not None and out.summary.errors == 5
    flags = tuple(validity_flags(out, None))
    # 5 ignored errors in 827,068 transactions: told, but not a doubt on the numbers
    assert flags == ("errors",) and suspect_flags(flags, out.summary.error_rate) == ()
    assert suspect_flags(flags, 0.002) == ("errors",)


def test_a_gap_at_any_interval_is_still_found() -> None:
    text = (FORMATS / "v0.5_old_rw_64th_10s_p99.txt").read_text()
    gapped = "".join(
        line for line in text.splitlines(keepends=True) if not line.startswith("[ 150s]")
    )
    assert "missing-intervals" in validity_flags(parse_output(gapped), None)
