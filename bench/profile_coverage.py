"""How much of each cell the on-CPU profile covers, on an idle host and on a busy one.

`perf record -p` needs time to attach to a server before its first sample; a profile that
starts after sysbench does misses the cell's first seconds, and on a busy host a short cell
can end before perf takes a sample at all (a bisection then has no flame graph). This runs
`oltplab run --profile` on one real engine (MariaDB 10.11 from Debian, 4 s read-only cells)
once per load level, the load being CPU hogs this script starts and stops, and prints for
each level the cells, the share of each cell between perf's first and last sample (median
and lowest), and the cells that have no sample at all. Over 100%: perf also samples the
second or so after sysbench ends, until the other collectors have their last second.

    python bench/profile_coverage.py [--hogs 0,6] [--repetitions 6] [--seconds 4] [--rounds 1]
                                     [--against OTHER/src] [--keep DIR]

With --against, each level runs this checkout and another (say a worktree of an older
commit) alternately, round by round, so the two meet the same host.
"""

from __future__ import annotations

import argparse
import os
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


def measure(
    folder: Path, hogs: int, repetitions: int, seconds: int, source: Path | None
) -> list[float]:
    """One `oltplab run --profile` under `hogs` CPU hogs, by the oltplab in `source` (a
    checkout's src/) or this one: each measured cell's coverage."""
    folder.mkdir(parents=True)
    (folder / "spec.toml").write_text(SPEC.format(repetitions=repetitions, seconds=seconds))
    environment = {**os.environ, "PYTHONPATH": str(source)} if source else None
    started = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(hogs)]
    try:
        subprocess.run(
            [sys.executable, "-m", "oltplab", "run", "spec.toml", "-r", "results", "--profile"],
            cwd=folder, check=True, stdout=subprocess.DEVNULL, env=environment,
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
    parser.add_argument("--rounds", type=int, default=1, help="runs per level and checkout")
    parser.add_argument("--against", type=Path, help="another checkout's src/, run alternately")
    parser.add_argument("--keep", type=Path, help="keep the results here")
    options = parser.parse_args()
    work = options.keep or Path(tempfile.mkdtemp(prefix="profile-coverage-"))
    sources: list[Path | None] = [None] + ([options.against] if options.against else [])
    shares: dict[tuple[int, int], list[float]] = {}
    for level, hogs in enumerate(int(n) for n in options.hogs.split(",")):
        for round_ in range(options.rounds):
            # The order turns each round, so a drifting host meets both checkouts alike.
            for which in sorted(range(len(sources)), reverse=round_ % 2 == 1):
                folder = work / f"{level}-hogs-{hogs}-round-{round_}-checkout-{which}"
                found = measure(folder, hogs, options.repetitions, options.seconds, sources[which])
                shares.setdefault((which, hogs), []).extend(found)
    print("checkout  hogs  cells  median covered  lowest  under 90%  without a sample")
    for (which, hogs), found in shares.items():
        name = "this" if sources[which] is None else str(sources[which])
        print(
            f"{name:>8}  {hogs:>4}  {len(found):>5}  {statistics.median(found):>14.0%}"
            f"  {min(found):>6.0%}  {sum(s < 0.9 for s in found):>9}"
            f"  {sum(s == 0 for s in found):>16}"
        )
    print(f"results: {work}")


if __name__ == "__main__":
    main()
