"""Peak memory of `oltplab import` as a sysbench file grows: it must stay flat.

Writes a 1 MB and a 100 MB sysbench output (a run of a week, one line a second: the
largest a real run makes), imports each with `oltplab import` in a process of its own and
prints their peak resident memory side by side. For contrast it also prints what reading
the 100 MB file whole (the parser's in-memory form, `parse_output(text)`) takes. Target:
under 200 MB for the 100 MB file.

    python bench/import_memory.py [--megabytes 100]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The generator of known sysbench output lives with the tests, outside the package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.synthetic import sysbench_text

# Runs the command given and prints the peak resident memory (KB) of that child.
_PEAK = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "if done.returncode: sys.exit(done.stderr)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)
_WHOLE = (
    "import sys\n"
    "from oltplab.sysbench.output import parse_output\n"
    "print(len(parse_output(open(sys.argv[1]).read()).intervals))\n"
)
TARGET_MB = 200


def write_tree(root: Path, megabytes: float) -> Path:
    """A benchmark_logs tree with one file of about this size."""

    def text(seconds: int) -> str:
        return sysbench_text([1000.0 + (second % 97) for second in range(seconds)], 16)

    per_line = (len(text(2000)) - len(text(1000))) / 1000
    folder = root / "benchmark_logs" / "mysql" / "8.0.31"
    folder.mkdir(parents=True)
    path = folder / "Tier1G_RW_16th.sysbench.txt"
    path.write_text(text(max(10, int(megabytes * 1024**2 / per_line))))
    return path


def peak_mb(*command: str) -> tuple[float, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, *command], capture_output=True, text=True, check=True
    )
    return int(done.stdout.split()[-1]) / 1024, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=100)
    args = parser.parse_args()
    oltplab = [sys.executable, "-m", "oltplab"]
    rows = []
    with tempfile.TemporaryDirectory(prefix="oltplab-import-memory-") as scratch:
        for size in (1.0, args.megabytes):
            root = Path(scratch) / f"tree-{size:g}"
            path = write_tree(root, size)
            mb, seconds = peak_mb(*oltplab, "import", str(root), "-r", str(root / "out"))
            rows.append((path.stat().st_size / 1024**2, mb, seconds))
        whole, whole_seconds = peak_mb(sys.executable, "-c", _WHOLE, str(path))
    print(f"{'file MB':>8} {'peak RSS MB':>12} {'seconds':>8}  what")
    for (file_mb, mb, seconds), what in zip(
        rows, ("oltplab import", "oltplab import"), strict=True
    ):
        print(f"{file_mb:8.1f} {mb:12.1f} {seconds:8.1f}  {what}")
    print(f"{rows[-1][0]:8.1f} {whole:12.1f} {whole_seconds:8.1f}  the file read whole (contrast)")
    small, big = rows[0][1], rows[-1][1]
    print(f"peak memory, {rows[-1][0]:.0f} MB file / {rows[0][0]:.0f} MB file: {big / small:.2f}x")
    verdict = "met" if big < TARGET_MB else "MISSED"
    print(f"target: under {TARGET_MB} MB for the {rows[-1][0]:.0f} MB file: {verdict}")


if __name__ == "__main__":
    main()
