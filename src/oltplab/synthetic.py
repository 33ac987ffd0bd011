"""sysbench 1.0.20 output with numbers chosen in advance, for tests and benchmarks.

The text has the exact shape sysbench prints (per-second lines, then the summary), so
it goes through the same parser and importer as a real run; the known numbers make
expected tables exact.
"""

from __future__ import annotations

from collections.abc import Sequence

QUERIES_PER_TRANSACTION = {"rw": (14, 4, 2), "ro": (14, 0, 2)}


def sysbench_text(
    tps: Sequence[float],
    threads: int,
    *,
    mode: str = "rw",
    errors_per_s: float = 0.0,
    latency_ms: tuple[float, float, float, float] = (1.0, 5.0, 9.0, 40.0),
    summary: bool = True,
) -> str:
    """Output of a run whose per-second TPS is `tps`; latency is (min, avg, p95, max)."""
    reads_per_tx, writes_per_tx, other_per_tx = QUERIES_PER_TRANSACTION[mode]
    per_tx = reads_per_tx + writes_per_tx + other_per_tx
    lines = [
        "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)",
        "",
        "Running the test with following options:",
        f"Number of threads: {threads}",
        "Report intermediate results every 1 second(s)",
        "Initializing random number generator from current time",
        "",
        "",
        "Initializing worker threads...",
        "",
        "Threads started!",
        "",
    ]
    for second, value in enumerate(tps, start=1):
        lines.append(
            f"[ {second}s ] thds: {threads} tps: {value:.2f} qps: {value * per_tx:.2f} "
            f"(r/w/o: {value * reads_per_tx:.2f}/{value * writes_per_tx:.2f}/"
            f"{value * other_per_tx:.2f}) lat (ms,95%): {latency_ms[2]:.2f} "
            f"err/s: {errors_per_s:.2f} reconn/s: 0.00"
        )
    if not summary:
        return "\n".join(lines) + "\n"
    seconds = len(tps)
    transactions = round(sum(tps))
    errors = round(errors_per_s * seconds)
    reads, writes, other = (transactions * n for n in (reads_per_tx, writes_per_tx, other_per_tx))
    total = reads + writes + other
    lines += [
        "SQL statistics:",
        "    queries performed:",
        f"        read:                            {reads}",
        f"        write:                           {writes}",
        f"        other:                           {other}",
        f"        total:                           {total}",
        f"    transactions:                        {transactions}   "
        f"({transactions / seconds:.2f} per sec.)",
        f"    queries:                             {total}  ({total / seconds:.2f} per sec.)",
        f"    ignored errors:                      {errors}      ({errors / seconds:.2f} per sec.)",
        "    reconnects:                          0      (0.00 per sec.)",
        "",
        "General statistics:",
        f"    total time:                          {seconds:.4f}s",
        f"    total number of events:              {transactions}",
        "",
        "Latency (ms):",
        f"         min:                                    {latency_ms[0]:.2f}",
        f"         avg:                                    {latency_ms[1]:.2f}",
        f"         max:                                    {latency_ms[3]:.2f}",
        f"         95th percentile:                        {latency_ms[2]:.2f}",
        f"         sum:                                 {latency_ms[1] * transactions:.2f}",
        "",
        "Threads fairness:",
        f"    events (avg/stddev):           {transactions / threads:.4f}/0.00",
        f"    execution time (avg/stddev):   {seconds:.4f}/0.00",
        "",
    ]
    return "\n".join(lines)
