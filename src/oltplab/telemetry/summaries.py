"""One-off snapshots: pt-summary per host, pt-mysql-summary per engine, tier and workload.

They never run during a measurement, nor between a warm-up and the measurement it leads
to; their failures are written into the file they would have filled, never raised. Each
is taken once per results directory: a repetition runs the same binary with the same
settings, and its own counters are in the cell's telemetry. Both sample vmstat for one
second, not their default five: the per-second series are oltplab's own.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from oltplab.base.errors import EngineError
from oltplab.engines.hosts import Host
from oltplab.engines.server import Server
from oltplab.store.directory import ResultsDir

TIMEOUT_SECONDS = 120


def _capture(command: list[str], output: Path, machine: Host) -> bool:
    try:
        result = machine.run(command, timeout=TIMEOUT_SECONDS)
    except EngineError as exc:
        output.write_text(f"{exc}\n")
        return False
    output.write_text(result.stdout + (f"\n[stderr]\n{result.stderr}" if result.stderr else ""))
    return result.returncode == 0


def host_summary(results: Path) -> str | None:
    """pt-summary once per results directory; the reason when it could not be taken."""
    output = ResultsDir(results).host_summary
    if output.is_file():
        return None
    if shutil.which("pt-summary") is None:
        return "pt-summary not installed"
    if _capture(["pt-summary", "--sleep=1"], output, Host()):
        return None
    return f"pt-summary failed (see {output.name})"


def engine_summary(server: Server, output: Path) -> str | None:
    """pt-mysql-summary of a running engine, run where the engine runs; the reason when it
    could not be taken.

    The password goes through an option file only we can read, never the command line
    (which any user can list).
    """
    if server.client_protocol != "mysql" or output.is_file():
        return None  # a MySQL tool; PostgreSQL's settings are in the .vars.txt file
    if not server.machine.has("pt-mysql-summary"):
        return "pt-mysql-summary not installed"
    options = server.client_options()
    command = ["pt-mysql-summary", f"--defaults-file={options.path}", "--sleep=1"]
    with options.present():
        captured = _capture(command, output, server.machine)
    if captured:
        return None
    return f"pt-mysql-summary failed (see {output.name})"
