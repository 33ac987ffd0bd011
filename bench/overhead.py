"""How much wall time a matrix spends outside warm-up and measurement.

Runs a 2-engine x 2-tier x 2-thread read-write matrix with 10 s windows through the real
CLI and prints: overhead ratio = wall time / (warm-up + measure seconds).
The datadir snapshot (prepare once, copy per tier) is what keeps the ratio low.

    python bench/overhead.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WINDOW = 10
SPEC = f"""
name = "overhead"
workloads = ["oltp_read_write"]

[[engines]]
name = "mysql-8.0.31"

[[engines]]
name = "mariadb-10.11.5"

[[tiers]]
name = "128M"
buffer_pool = "128M"

[[tiers]]
name = "256M"
buffer_pool = "256M"

[dataset]
tables = 2
table_size = 10000

[protocol]
warmup_ro_seconds = {WINDOW}
warmup_rw_seconds = {WINDOW}
warmup_threads = 2
measure_seconds = {WINDOW}
threads = [1, 2]
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="keep the results in this directory")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="oltplab-overhead-"))
    results = args.keep or work / "results"
    (work / "overhead.toml").write_text(SPEC)
    # Binaries are fetched beforehand: a download is not part of a matrix's overhead.
    subprocess.run(
        [sys.executable, "-m", "oltplab", "engines", "fetch", "mysql-8.0.31", "mariadb-10.11.5"],
        check=True,
        capture_output=True,
    )
    started = time.monotonic()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "oltplab",
            "run",
            str(work / "overhead.toml"),
            "--results",
            str(results),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.monotonic() - started
    sessions, cells_per_session = 2 * 2, 2
    planned = sessions * (2 * WINDOW + cells_per_session * WINDOW)
    print(f"matrix: 2 engines x 2 tiers x 2 thread counts, {WINDOW} s windows")
    print(f"warm-up + measure seconds = {planned}")
    print(f"wall time = {wall:.1f} s")
    print(f"overhead ratio = wall time / (warm-up + measure seconds) = {wall / planned:.3f}")


if __name__ == "__main__":
    main()
