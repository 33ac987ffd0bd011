"""Import and report a tree the size of the 2026 report's raw data with this code and with
the code before the one-analysis restructuring, side by side in one run.

10 engines x 3 tiers x 8 thread counts x 3 scenarios, 900 per-second lines per file
(720 files), generated with known numbers. Targets: report under 5 s, import + report
under 10 s, report.html under 5 MB.

    python bench/report_scale.py [--before REV] [--keep DIR]

The code before is taken from git (`git archive REV src`), so run this from a clone.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# The generator of known sysbench output lives with the tests, outside the package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.synthetic import tree_2026

REPO = Path(__file__).resolve().parent.parent
BEFORE = "444ac6d"  # the last commit before analysis-once and the packed samples
SECONDS = 900


@dataclass(frozen=True)
class Timing:
    import_s: float
    report_s: float
    html_mb: float


def timed(source: Path, *args: str) -> float:
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "oltplab", *args],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(source)},
    )
    return time.monotonic() - started


def measure(source: Path, tree: Path, results: Path) -> Timing:
    import_s = timed(source, "import", str(tree), "--results", str(results))
    report_s = timed(source, "report", str(results))
    html = results / "report" / "report.html"
    return Timing(import_s, report_s, html.stat().st_size / 1e6)


def checkout(rev: str, into: Path) -> Path:
    """The package sources of `rev`, unpacked into `into`."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "src"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE, help=f"git revision (default {BEFORE})")
    parser.add_argument("--keep", type=Path, help="keep the tree and results here")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="oltplab-scale-"))
    tree = root / "benchmark_data"
    files = tree_2026(tree, SECONDS)
    before_src = checkout(args.before, Path(tempfile.mkdtemp(prefix="oltplab-before-")))
    before = measure(before_src, tree, root / "results-before")
    now = measure(REPO / "src", tree, root / "results")
    print(f"tree: {files} files x {SECONDS} per-second lines")
    print(f"{'':18}{'before (' + args.before + ')':>18}{'now':>10}{'ratio':>8}   target")
    rows = [
        ("import", before.import_s, now.import_s, "s", ""),
        ("report", before.report_s, now.report_s, "s", "under 5 s"),
        (
            "import + report",
            before.import_s + before.report_s,
            now.import_s + now.report_s,
            "s",
            "under 10 s",
        ),
        ("report.html", before.html_mb, now.html_mb, "MB", "under 5 MB"),
    ]
    for name, old, new, unit, target in rows:
        print(f"{name:18}{old:>15.1f} {unit:<2}{new:>7.1f} {unit:<2}{new / old:>7.2f}x   {target}")
    print(f"results: {root}")


if __name__ == "__main__":
    main()
