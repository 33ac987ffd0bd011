"""Between-session reproducibility: the same A/B measured in separate sessions.

Each session is its own `oltplab run --margin 1%` search of two engines (fresh servers,
the dataset prepared again), at least --apart minutes after the one before it; the
sessions take turns with bench/power.py's trials (the lock beside WORK). Then
`oltplab reproduced` over the sessions prints the between-session spread of the A/B and
stores it for this host, where `bisect` finds it:

    python3 bench/sessions.py [--sessions 3] [--apart 60] [--keep DIR]
    oltplab reproduced DIR/session1 DIR/session2 DIR/session3
"""

from __future__ import annotations

import argparse
import fcntl
import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from tiny_spec import tiny_spec

OLTPLAB = [sys.executable, "-m", "oltplab"]
ENGINES = ("mariadb-10.11.5", "mariadb-11.4.5")


def spec() -> str:
    return tiny_spec("sessions", list(ENGINES), '["oltp_read_only"]', 10, 4)


def started_at(results: Path) -> datetime | None:
    try:
        return datetime.fromisoformat(
            json.loads((results / "run.json").read_text())["runs"][0]["started_at"]
        )
    except (OSError, ValueError, KeyError, IndexError):
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--apart", type=float, default=60, help="minutes between starts")
    parser.add_argument("--keep", type=Path, default=Path("sessions"))
    args = parser.parse_args()
    work = args.keep.resolve()
    work.mkdir(parents=True, exist_ok=True)
    spec_file = work / "spec.toml"
    spec_file.write_text(spec())
    subprocess.run([*OLTPLAB, "engines", "fetch", *ENGINES], check=True, capture_output=True)
    previous = None
    for number in range(1, args.sessions + 1):
        results = work / f"session{number}"
        finished = work / f"session{number}.done"
        if finished.is_file():
            previous = started_at(results)
            continue
        if previous is not None:
            due = previous.timestamp() + args.apart * 60
            time.sleep(max(0.0, due - time.time()))
        with (work.parent / "machine.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            done = subprocess.run(
                [*OLTPLAB, "run", str(spec_file), "-r", str(results), "--no-telemetry",
                 "--margin", "1%", "--budget", "10m"],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
        (work / f"session{number}.log").write_text(done.stdout + done.stderr)
        finished.write_text(f"{done.returncode}\n")
        previous = started_at(results) or datetime.now(UTC)
        print(f"session {number}: exit {done.returncode} ({datetime.now(UTC):%H:%M})", flush=True)
    listed = " ".join(str(work / f"session{n}") for n in range(1, args.sessions + 1))
    print(f"\nsessions in {work}; next: oltplab reproduced {listed}")


if __name__ == "__main__":
    main()
