"""Acceptance 3 of issue 43 on a real engine, at a length a user would run: three
repetitions of one MySQL read-write cell (2 threads, 300 s the most, adaptive at +-2%), the
third with a transaction held open beside it. Prints each cell's length and note: the first
runs whole to show its block's horizon, the second may stop from it, the third must run
whole and name the history list. About 20 minutes.

    python3 bench/held_open.py [RESULTS]   (default: a new folder under /tmp)
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOLDING = ROOT / "tests" / "data" / "workloads" / "holding_read_write.lua"
MEASURE_SECONDS = 300


def spec(folder: Path, repetitions: int) -> Path:
    path = folder / "held-open.toml"
    path.write_text(
        'name = "held-open"\n[[engines]]\nname = "mysql-8.0.31"\n'
        f'[[workloads]]\nname = "holding"\nscript = "{HOLDING}"\n'
        f'options = {{hold_open_when = "{folder / "hold"}"}}\n'
        "[dataset]\ntables = 2\ntable_size = 10000\n"
        '[[tiers]]\nname = "128M"\nbuffer_pool = "128M"\n'
        "[protocol]\nwarmup_ro_seconds = 10\nwarmup_rw_seconds = 30\nwarmup_threads = 2\n"
        f"measure_seconds = {MEASURE_SECONDS}\nthreads = [2]\nrepetitions = {repetitions}\n"
        'stop = "adaptive"\nstop_target_pct = 2\nstop_min_seconds = 60\n'
    )
    return path


def run(folder: Path, repetitions: int) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "oltplab", "run", str(spec(folder, repetitions)),
         "--results", str(folder / "out")],
        capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"oltplab run failed ({done.returncode}): {done.stderr.strip()[-500:]}")


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="held-"))
    folder.mkdir(parents=True, exist_ok=True)
    run(folder, 2)
    (folder / "hold").touch()
    run(folder, 3)
    db = sqlite3.connect(f"file:{folder / 'out' / 'ledger.sqlite'}?mode=ro", uri=True)
    rows = db.execute(
        "SELECT c.repetition, s.total_time_s, c.flags, c.notes FROM cells c"
        " JOIN summaries s ON s.cell_id = c.id ORDER BY c.repetition"
    ).fetchall()
    db.close()
    for repetition, seconds, flags, notes in rows:
        held = " (transaction held open beside it)" if repetition == 3 else ""
        print(f"repetition {repetition}{held}: {seconds:.0f} s of {MEASURE_SECONDS}, "
              f"flags [{flags}]\n  {notes}")  # fmt: skip
    print(f"results: {folder / 'out'}")


if __name__ == "__main__":
    main()
