"""A run whose disk fills up in its second cell (of 1 then 2 threads), then resumes once
space is freed: run as
`unshare --mount --propagation private python3 -m tests.support.full_disk DIR SIZE
[WORK]`, WORK a folder off the small disk given to the run as --work-dir.

The mount namespace keeps the small tmpfs private to this process and its children (the
system's mounts are not touched, and it vanishes with them); what the test checks is
written to DIR/outcome.json, outside it.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def cells(results: Path) -> list[dict[str, Any]]:
    db = sqlite3.connect(f"file:{results / 'ledger.sqlite'}?mode=ro", uri=True, timeout=30)
    db.row_factory = sqlite3.Row
    try:
        return [
            dict(row)
            for row in db.execute(
                "SELECT c.key, c.status, s.tps FROM cells c"
                " LEFT JOIN summaries s ON s.cell_id = c.id ORDER BY c.id"
            )
        ]
    finally:
        db.close()


def in_second_cell(results: Path) -> bool:
    """The first cell done, and the second's sysbench past its first second."""
    try:
        if not any(c["status"] == "done" for c in cells(results)):
            return False
    except sqlite3.Error:
        return False  # no ledger yet
    second = list((results / "benchmark_logs").rglob("Tier*_2th.sysbench.txt"))
    return bool(second) and "[ 1s ]" in second[0].read_text(errors="replace")


def fill(path: Path) -> int:
    """Write until the disk is full; the bytes written."""
    written = 0
    try:
        with path.open("wb") as ballast:
            while True:
                ballast.write(b"\0" * (1 << 20))
                ballast.flush()
                written += 1 << 20
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
    return written


def main(folder: Path, size: str, work: Path | None) -> None:
    disk = folder / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)], check=True)
    (disk / "s.toml").write_text((folder / "s.toml").read_text())
    results = disk / "out"
    outcome: dict[str, Any] = {}
    # The engine summary is no part of it (2-5 s a session).
    command = ["run", "s.toml", "--results", "out", "--telemetry", "default,-pt-mysql-summary"]
    if work is not None:
        command += ["--work-dir", str(work)]
    run = subprocess.Popen(
        [sys.executable, "-m", "oltplab", *command],
        cwd=disk,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and not in_second_cell(results):
        time.sleep(0.2)
    # The run held still (SIGSTOP) while the ballast fills the disk: the disk is full while
    # the second cell's sysbench and engine write, however slow the host.
    os.kill(run.pid, signal.SIGSTOP)
    try:
        outcome["before_fill"] = cells(results)
        # What was on the disk before the ballast: a run that filled it on its own (seen once
        # in a full run from a clean clone, 2026-11-29: the ballast refused at its first
        # byte) is then named file by file.
        outcome["disk_before_fill"] = subprocess.run(
            ["du", "-a", "-k", str(disk)], capture_output=True, text=True, check=False
        ).stdout.splitlines()[-40:]
        outcome["ballast_bytes"] = fill(disk / "ballast")
    finally:
        os.kill(run.pid, signal.SIGCONT)
    stdout, stderr = run.communicate(timeout=600)
    outcome["first"] = {"code": run.returncode, "stdout": stdout, "stderr": stderr}
    outcome["after_stop"] = cells(results)
    outcome["log"] = (results / "oltplab.log").read_text()[-3000:]
    (disk / "ballast").unlink(missing_ok=True)
    # A plain interpreter: tests/support/cli.py's server would import every library for
    # this one call.
    again = subprocess.run(
        [sys.executable, "-m", "oltplab", *command],
        cwd=disk,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    outcome["second"] = {"code": again.returncode, "stdout": again.stdout, "stderr": again.stderr}
    outcome["after_resume"] = cells(results)
    db = sqlite3.connect(results / "ledger.sqlite")
    outcome["integrity"] = db.execute("PRAGMA integrity_check").fetchone()[0]
    db.close()
    (folder / "outcome.json").write_text(json.dumps(outcome, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]) if len(sys.argv) > 3 else None)
