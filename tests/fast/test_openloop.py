"""Open loop without engines: histograms that merge exactly, rate-mode output, bad rates,
and the capacity search against a synthetic server whose knee is known (the one test
double the issue allows: the search's own unit test)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from oltplab.analysis.capacity import (
    Measured,
    Objective,
    client_threads,
    max_client_threads,
    search,
)
from oltplab.analysis.estimate import Estimate
from oltplab.analysis.latency import PERCENTILES, Histogram, bucket, percentile_estimate
from oltplab.base.errors import OltplabError
from oltplab.plan import build_plan, cells_of
from oltplab.spec import parse_spec
from oltplab.sysbench.output import parse_output
from oltplab.sysbench.reading import read_output
from oltplab.sysbench.validity import saturated, validity_flags
from tests.support.cli import oltplab

FORMATS = Path(__file__).parent.parent / "data" / "sysbench" / "formats"


def test_merged_histograms_give_the_percentiles_of_all_their_samples() -> None:
    rng = np.random.default_rng(22)
    first = rng.lognormal(0.5, 0.6, 20_000)
    second = np.concatenate([rng.lognormal(0.7, 0.4, 15_000), rng.uniform(200, 900, 300)])
    merged = Histogram.from_latencies(first).merge(Histogram.from_latencies(second))
    whole = Histogram.from_latencies(np.concatenate([first, second]))
    assert merged.events == whole.events == 35_300
    for q in (*PERCENTILES, 99.99):
        assert merged.percentile(q) == whole.percentile(q)
    assert merged.maximum == whole.maximum
    # and never the mean of the two runs' percentiles
    one, two = Histogram.from_latencies(first), Histogram.from_latencies(second)
    assert merged.percentile(99.9) != pytest.approx(
        (one.percentile(99.9) + two.percentile(99.9)) / 2
    )


def test_the_buckets_are_sysbench_s() -> None:
    printed = read_output(FORMATS / "v1.0_rw_2th_histogram_p99.txt")
    histogram = Histogram.of(printed.histogram)
    assert all(bucket(v) == v for v in histogram.values)
    assert printed.summary is not None
    assert histogram.percentile(99) == pytest.approx(printed.summary.lat_pct_ms, abs=0.01)
    found = percentile_estimate([histogram], 99, "x")
    assert found is not None and found.low <= found.point <= found.high


RATE_MODE = """sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)

Running the test with following options:
Number of threads: 1
Target transaction rate: 100/sec
Report intermediate results every 1 second(s)

Threads started!

[ 1s ] thds: 1 tps: 99.00 qps: 99.00 (r/w/o: 99.00/0.00/0.00) lat (ms,95%): 1.10 err/s: 0.00 reconn/s: 0.00
[ 1s ] queue length: 0, concurrency: 0
[ 2s ] thds: 1 tps: 60.00 qps: 60.00 (r/w/o: 60.00/0.00/0.00) lat (ms,95%): 480.00 err/s: 0.00 reconn/s: 0.00
[ 2s ] queue length: 41, concurrency: 1
SQL statistics:
    queries performed:
        read:                            159
        write:                           0
        other:                           0
        total:                           159
    transactions:                        159    (79.50 per sec.)
    queries:                             159    (79.50 per sec.)
    ignored errors:                      0      (0.00 per sec.)
    reconnects:                          0      (0.00 per sec.)

General statistics:
    total time:                          2.0001s
    total number of events:              159

Latency (ms):
         min:                                    1.00
         avg:                                   60.00
         max:                                  500.00
         95th percentile:                      480.00
         sum:                                9540.00
"""


def test_rate_mode_output_and_the_saturated_flag() -> None:
    out = parse_output(RATE_MODE)
    assert out.rate == 100 and len(out.samples) == 2
    assert out.queue.tolist() == [[1.0, 0.0, 0.0], [2.0, 41.0, 1.0]]
    # 79.5 served of 100 offered: the queue grew
    assert "saturated" in validity_flags(out, 2)
    assert "saturated" not in validity_flags(out, 2, rate=80)


# What sysbench prints when its queue of waiting events fills: the header, then one line.
QUEUE_FULL = RATE_MODE[: RATE_MODE.index("[ 1s ]")].replace("100/sec", "1000000/sec") + (
    "FATAL: The event queue is full. This means the worker threads are unable to keep up"
    " with the specified event generation rate\n"
)


def test_a_rate_sysbench_cannot_even_queue_is_saturation() -> None:
    out = parse_output(QUEUE_FULL)
    assert out.summary is None and out.queue_overflowed
    assert validity_flags(out, 5, rate=1_000_000) == ["saturated"]


def test_a_shortfall_the_random_arrivals_explain_is_not_saturation() -> None:
    # 94 served of 100 offered over 5 s with nothing queued: 30 events short, within three
    # standard deviations (67) of a Poisson count of 500; at 20,000 tps it is not.
    assert not saturated(100, 94, 5, queued_at_end=0)
    # The queue at the end holds what the arrivals' chance does not: one event waiting is an
    # arrival not yet picked up (a CI run: 949 of 1,000 served, queue 0 but for the planted
    # stalls, 1 at the end); 30 waiting are the 30 events short.
    assert not saturated(100, 94.87, 10, queued_at_end=1)
    assert not saturated(100, 94, 5, queued_at_end=3)
    assert saturated(100, 94, 5, queued_at_end=30)
    assert saturated(20_000, 18_800, 5, queued_at_end=0)
    assert not saturated(20_000, 19_500, 5, queued_at_end=40)  # within the 5% allowed


def test_rates_are_a_dimension_and_bad_rates_one_line(tmp_path: Path) -> None:
    spec = parse_spec(
        'engines = [{name = "mysql-8.0.31"}]\nworkloads = ["oltp_read_only"]\n'
        "[protocol]\nthreads = [1, 2]\nrates = [500, 100]\n",
        "spec",
    )
    cells = cells_of(build_plan(spec))
    assert sorted({(c.threads, c.rate) for c in cells}) == [
        (1, 0), (1, 100), (1, 500), (2, 0), (2, 100), (2, 500),
    ]  # fmt: skip
    assert {c.scenario.name for c in cells} == {"ro-local", "ro-local-100tps", "ro-local-500tps"}
    for rates, said in (("[0]", "from 1 to"), ("[-5]", "from 1 to"), ('["fast"]', "whole number")):
        (tmp_path / "bad.toml").write_text(
            f'engines = [{{name = "mysql-8.0.31"}}]\n[protocol]\nrates = {rates}\n'
        )
        done = oltplab("run", "bad.toml", "-r", "out", cwd=tmp_path)
        assert done.returncode == 2
        line = done.stderr.strip().splitlines()
        assert len(line) == 1 and "protocol.rates[0]" in line[0] and said in line[0], line
        assert not (tmp_path / "out").exists()


def test_an_objective_is_read_or_refused() -> None:
    assert Objective.parse("p99<10ms") == Objective(99.0, 10.0)
    assert Objective.parse(" p99.9 < 1 s ") == Objective(99.9, 1000.0)
    for bad in ("p100<1ms", "99<10ms", "p99>10ms", "p99<0ms"):
        with pytest.raises(OltplabError):
            Objective.parse(bad)


@pytest.mark.parametrize(("service_ms", "limit_ms"), [(1.0, 10.0), (0.5, 20.0), (2.0, 50.0)])
def test_the_search_finds_the_knee_of_a_known_server(service_ms: float, limit_ms: float) -> None:
    """An M/M/1 server: sojourn times are exponential with rate mu - lambda, so its p99 is
    ln(100) / (mu - lambda) and the highest rate with p99 under L is mu - ln(100) / L."""
    mu = 1000 / service_ms
    knee = mu - math.log(100) / (limit_ms / 1000)
    rng = np.random.default_rng(int(service_ms * 100))

    def measure(rate: int, repetitions: int) -> Measured:
        if rate >= mu:
            return Measured(None, True, repetitions)
        p99 = 1000 * math.log(100) / (mu - rate)
        noise = p99 * 0.03 / math.sqrt(repetitions)
        seen = p99 * (1 + rng.normal(0, 0.01))
        return Measured(Estimate(seen, seen - 2 * noise, seen + 2 * noise, repetitions, "m"),
                        False, repetitions)  # fmt: skip

    found = search(measure, Objective(99, limit_ms), start=100, precision=0.02)
    assert found.sustained is not None and found.missed is not None
    assert abs(found.sustained - knee) / knee <= 0.05
    assert found.sustained < found.missed
    estimate = found.estimate
    assert estimate is not None and estimate.low <= estimate.point <= estimate.high


def test_a_rate_the_client_cannot_offer_is_no_verdict_on_the_engine() -> None:
    """Rates from 1,600 on need more client threads than the cores allow: those probes
    are marked client-limited, the search stops there, and the capacity is a lower bound
    that names the client's limit, never the engine's."""

    def measure(rate: int, repetitions: int) -> Measured:
        if rate >= 1600:
            return Measured(None, False, repetitions, client_limited=True)
        return Measured(Estimate(1.0, 0.9, 1.1, repetitions, "m"), False, repetitions)

    found = search(measure, Objective(99, 5.0), start=100, precision=0.02)
    assert (found.sustained, found.missed, found.client_limit) == (800, None, 1600)
    assert [p.rate for p in found.probes] == [100, 200, 400, 800, 1600]
    assert found.probes[-1].measured.client_limited and found.probes[-1].undecided


def test_client_threads_follow_little_s_law_within_the_cores() -> None:
    """On the closed loop alone: one thread served 15,000 tps and two 87,000 (an idle
    machine's wake-ups slow one thread), so 12,800 tps offered need two threads with
    headroom, 100 tps one. Once an open-loop probe met the objective, its median latency
    (longer than the closed loop's: its threads sleep between events) sizes the next: at
    0.3 ms, 12,800 tps need 6 threads. A rate needing more than the cores allow runs with
    the most there may be, and says so."""
    closed = {1: 15_000.0, 2: 87_000.0, 4: 84_000.0}
    assert client_threads(100, closed, cores=2) == (1, False)
    assert client_threads(12_800, closed, cores=2) == (2, False)
    assert client_threads(70_000, closed, cores=2) == (3, False)
    assert client_threads(12_800, closed, cores=2, open_loop_ms=0.3) == (6, False)
    assert client_threads(12_800, closed, cores=2, open_loop_ms=0.01) == (2, False)
    threads, short = client_threads(1_000_000, closed, cores=2)
    assert short and threads == max_client_threads(2) == 8
    assert client_threads(5_000, {1: 1000.0}, cores=16) == (8, False)
