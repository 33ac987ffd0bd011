"""Does telemetry change what it measures? TPS with telemetry on against off, interleaved.

Runs the same read-write cell (MySQL 8.0.31, 4 threads, 30 s) 5 times with the OS
collectors and the engine probe on and 5 times with `--no-telemetry`, alternating which
goes first in each round (on/off, off/on, ...) so a drifting host hits both alike. Each
round adds one repetition to each results directory through the real CLI, so every
measurement restores the datadir snapshot, starts the engine and warms up as usual.
Prints the TPS ratio on/off with its 95% interval (paired by round), computed by
oltplab's own comparison code.

    python bench/telemetry_overhead.py [--rounds 5] [--seconds 30] [--keep DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from oltplab.analysis.estimate import PointSample, compare
from oltplab.stats import steady
from oltplab.store.ledger import Ledger

ENGINE = "mysql-8.0.31"


def spec(repetitions: int, seconds: int) -> str:
    return f"""
name = "telemetry-overhead"
workloads = ["oltp_read_write"]

[[engines]]
name = "{ENGINE}"

[config]
buffer_pool = "128M"
redo_capacity = "128M"

[dataset]
tables = 2
table_size = 10000

[protocol]
warmup_ro_seconds = 10
warmup_rw_seconds = 10
warmup_threads = 4
measure_seconds = {seconds}
threads = [4]
repetitions = {repetitions}
"""


def run(work: Path, results: Path, telemetry: bool, repetitions: int, seconds: int) -> None:
    spec_file = work / f"round{repetitions}.toml"
    spec_file.write_text(spec(repetitions, seconds))
    command = [sys.executable, "-m", "oltplab", "run", str(spec_file), "--results", str(results)]
    if not telemetry:
        command.append("--no-telemetry")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"oltplab run failed ({results}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")


def series_by_repetition(results: Path) -> dict[int, np.ndarray]:
    """Each done repetition's steady per-second TPS, as the report cuts it."""
    ledger = Ledger.open(results, create=False, journal=False)
    try:
        series = ledger.tps_series()
        done = {row["key"]: row["repetition"] for row in ledger.cells() if row["status"] == "done"}
    finally:
        ledger.close()
    return {rep: steady(series[key])[1] for key, rep in sorted(done.items()) if key in series}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--keep", type=Path, help="keep the results in this directory")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="oltplab-telemetry-overhead-"))
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "oltplab", "engines", "fetch", ENGINE],
        check=True,
        capture_output=True,
    )
    on, off = work / "telemetry-on", work / "telemetry-off"
    started = time.monotonic()
    for round_ in range(1, args.rounds + 1):
        order = [(on, True), (off, False)] if round_ % 2 else [(off, False), (on, True)]
        for results, telemetry in order:
            run(work, results, telemetry, round_, args.seconds)
        print(f"round {round_}/{args.rounds} done ({time.monotonic() - started:.0f} s)", flush=True)
    with_telemetry, without = series_by_repetition(on), series_by_repetition(off)
    result = compare(
        PointSample(with_telemetry), PointSample(without), paired=True, label="telemetry"
    )
    means_on = [float(s.mean()) for _, s in sorted(with_telemetry.items())]
    means_off = [float(s.mean()) for _, s in sorted(without.items())]
    print(f"TPS with telemetry, by round:    {', '.join(f'{m:.1f}' for m in means_on)}")
    print(f"TPS without telemetry, by round: {', '.join(f'{m:.1f}' for m in means_off)}")
    ratio = result.ratio()
    interval = (
        f"95% interval [{ratio.low:.3f}, {ratio.high:.3f}]"
        if ratio.low is not None and ratio.high is not None
        else "no interval"
    )
    print(
        f"TPS ratio on/off = {ratio.point:.3f}, {interval} "
        f"({result.method}, n={result.n}): {result.verdict}"
    )
    print(f"results in {work}")


if __name__ == "__main__":
    main()
