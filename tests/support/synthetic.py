"""sysbench 1.0.20 output with numbers chosen in advance, for tests and benchmarks.

The text has the exact shape sysbench prints (per-second lines, then the summary), so
it goes through the same parser and importer as a real run; the known numbers make
expected tables exact.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

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


# The shape of the 2026 report's raw data: its engines, tiers, thread counts and scenarios.
ENGINES_2026 = [
    ("mariadb", "10.11.16-MariaDB-ubu2204"),
    ("mariadb", "11.4.10-MariaDB-ubu2404"),
    ("mariadb", "12.1.2-MariaDB-ubu2404"),
    ("mysql", "5.7.44"),
    ("mysql", "8.0.45"),
    ("mysql", "8.4.8"),
    ("mysql", "9.6.0"),
    ("percona-server", "5.7.44-48"),
    ("percona-server", "8.0.45-36"),
    ("percona-server", "8.4.7-7"),
]
TIERS_2026 = {"2G": 0.05, "12G": 0.1, "32G": 1.0}
THREADS_2026 = [1, 4, 16, 32, 64, 128, 256, 512]
SCENARIOS_2026 = {
    "benchmark_logs": 1.0,
    "benchmark_logs_read_only": 2.5,
    "benchmark_remote_logs": 0.95,
}


def tree_2026(
    root: Path,
    seconds: int = 900,
    seed: int = 2026,
    drifting: float = 0.0,
    repetitions: int = 1,
    late_drifting: float = 0.0,
    threads: Sequence[int] = tuple(THREADS_2026),
) -> int:
    """A result tree shaped like the 2026 report's (720 files a repetition), with known
    numbers: each run warms up for a minute or so, then holds a level with 5% noise; a
    `drifting` share of them (drawn apart, so the others stay as they are without it)
    instead lose 20% of their level over the first 200 s, as a small buffer pool filling
    with dirty pages does. A `late_drifting` share of blocks hold their level for 350 s and
    then rise or fall by 8% until their end, every repetition alike (as the published tree's
    1-thread cells did: flat for minutes, then purge or checkpoints catch up). `threads`
    keeps some of its thread counts (every engine, tier and scenario still there). Files
    written."""
    rng = random.Random(seed)
    drift_rng = random.Random(seed + 1)
    late_rng = random.Random(seed + 2)
    files = 0
    for scenario, scale in SCENARIOS_2026.items():
        for family, version in ENGINES_2026:
            folder = root / scenario / family / version
            folder.mkdir(parents=True, exist_ok=True)
            engine_factor = rng.uniform(0.8, 1.2)
            for tier, tier_factor in TIERS_2026.items():
                for count in threads:
                    level = 400 * scale * tier_factor * engine_factor * min(count, 128) ** 0.7
                    late = 0.0
                    if late_drifting and late_rng.random() < late_drifting:
                        late = late_rng.choice((-0.08, 0.08))
                    for repetition in range(1, repetitions + 1):
                        warm_up = rng.randint(20, 120)
                        series = [
                            max(0.0, rng.gauss(level, level * 0.05))
                            * min(1.0, 0.5 + s / warm_up / 2)
                            * (1 + late * max(0, s - 350) / (seconds - 350))
                            for s in range(seconds)
                        ]
                        if drifting and drift_rng.random() < drifting:
                            series = [
                                v * (1 - 0.2 * min(s, 200) / 200) for s, v in enumerate(series)
                            ]
                        text = sysbench_text(
                            series, count, mode="ro" if "read_only" in scenario else "rw"
                        )
                        run = f"_run{repetition}" if repetitions > 1 else ""
                        (folder / f"Tier{tier}_RW_{count}th{run}.sysbench.txt").write_text(text)
                        files += 1
    return files
