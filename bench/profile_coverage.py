"""How much of each cell the on-CPU profile covers, on an idle host and on a busy one.

`perf record -p` needs time to attach to a server before its first sample; a profile that
starts after sysbench does misses the cell's first seconds, and on a busy host a short cell
can end before perf takes a sample at all (a bisection then has no flame graph). This runs
`oltplab run --profile` on one real engine (MariaDB 10.11 from Debian, 4 s read-only cells)
once per load level, the load being CPU hogs this script starts and stops, and prints for
each level the cells, the share of each cell between perf's first and last sample (median
and lowest), and the cells that have no sample at all. Over 100%: perf also samples the
second or so after sysbench ends, until the other collectors have their last second.

    python bench/profile_coverage.py [--hogs 0,6] [--repetitions 6] [--seconds 4] [--keep DIR]

It runs `python -m oltplab`, so PYTHONPATH=OTHER/src measures another checkout's profiler.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from oltplab.analysis.dataset import CellRecord, load

SPEC = """name = "profile-coverage"
workloads = ["oltp_read_only"]
[[engines]]
name = "mariadb"
source = {{debian = "mariadb-server-core"}}
[config]
buffer_pool = "128M"
[dataset]
tables = 2
table_size = 5000
[protocol]
warmup_ro_seconds = 2
warmup_rw_seconds = 0
warmup_threads = 4
measure_seconds = {seconds}
threads = [4]
repetitions = {repetitions}
"""


def sample_times(data: Path) -> list[float]:
    """The times of perf's samples in `data` (seconds, perf's own clock)."""
    if not data.is_file():
        return []
    script = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", "time"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return [float(line.strip().rstrip(":")) for line in script.stdout.split("\n") if line.strip()]


def coverage(cell: CellRecord) -> float:
    """The share of the cell between its profile's first and last sample (0: none)."""
    output = Path(cell.source) / cell.artifact
    stem = output.with_name(output.name.removesuffix(".sysbench.txt"))
    times = sample_times(stem.with_name(stem.name + ".perf.data"))
    if len(times) < 2 or not cell.duration_s:
        return 0.0
    return (max(times) - min(times)) / cell.duration_s


def measure(folder: Path, hogs: int, repetitions: int, seconds: int) -> list[float]:
    folder.mkdir(parents=True)
    (folder / "spec.toml").write_text(SPEC.format(repetitions=repetitions, seconds=seconds))
    started = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(hogs)]
    try:
        subprocess.run(
            [sys.executable, "-m", "oltplab", "run", "spec.toml", "-r", "results", "--profile"],
            cwd=folder, check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    finally:
        for hog in started:
            hog.kill()
            hog.wait()
    return [coverage(c) for c in load([folder / "results"]).cells if c.measured]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hogs", default="0,6", help="CPU hogs per level, comma-separated")
    parser.add_argument("--repetitions", type=int, default=6)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--keep", type=Path, help="keep the results here")
    options = parser.parse_args()
    work = options.keep or Path(tempfile.mkdtemp(prefix="profile-coverage-"))
    print("hogs  cells  median covered  lowest  without a sample")
    for level, hogs in enumerate(int(n) for n in options.hogs.split(",")):
        shares = measure(work / f"{level}-hogs-{hogs}", hogs, options.repetitions, options.seconds)
        print(
            f"{hogs:>4}  {len(shares):>5}  {statistics.median(shares):>13.0%}"
            f"  {min(shares):>6.0%}  {sum(s == 0 for s in shares):>16}"
        )
    print(f"results: {work}")


if __name__ == "__main__":
    main()
