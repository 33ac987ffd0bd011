"""Import and report a tree the size of the 2026 report's raw data, and time both.

10 engines x 3 tiers x 8 thread counts x 3 scenarios, 900 per-second lines per file
(720 files), generated with known numbers; target: import + report in at most 30 s.

    python bench/report_scale.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from oltplab.synthetic import sysbench_text

ENGINES = [
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
TIERS = {"2G": 0.05, "12G": 0.1, "32G": 1.0}
THREADS = [1, 4, 16, 32, 64, 128, 256, 512]
SCENARIOS = {"benchmark_logs": 1.0, "benchmark_logs_read_only": 2.5, "benchmark_remote_logs": 0.95}
SECONDS = 900


def generate(root: Path) -> int:
    rng = random.Random(2026)
    files = 0
    for scenario, scale in SCENARIOS.items():
        for family, version in ENGINES:
            folder = root / scenario / family / version
            folder.mkdir(parents=True, exist_ok=True)
            engine_factor = rng.uniform(0.8, 1.2)
            for tier, tier_factor in TIERS.items():
                for threads in THREADS:
                    level = 400 * scale * tier_factor * engine_factor * min(threads, 128) ** 0.7
                    series = [max(0.0, rng.gauss(level, level * 0.05)) for _ in range(SECONDS)]
                    text = sysbench_text(
                        series, threads, mode="ro" if "read_only" in scenario else "rw"
                    )
                    (folder / f"Tier{tier}_RW_{threads}th.sysbench.txt").write_text(text)
                    files += 1
    return files


def timed(*args: str) -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "oltplab", *args], check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="keep the tree and results here")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="oltplab-scale-"))
    files = generate(root / "benchmark_data")
    results = root / "results"
    import_s = timed("import", str(root / "benchmark_data"), "--results", str(results))
    report_s = timed("report", str(results))
    html = results / "report" / "report.html"
    print(f"tree: {files} files x {SECONDS} per-second lines")
    print(f"import: {import_s:.1f} s")
    print(f"report: {report_s:.1f} s (report.html {html.stat().st_size / 1e6:.1f} MB)")
    print(f"import + report = {import_s + report_s:.1f} s (target: at most 30 s)")


if __name__ == "__main__":
    main()
