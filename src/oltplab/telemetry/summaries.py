"""One-off snapshots: pt-summary per host, pt-mysql-summary per engine, tier and workload.

They never run during a measurement, nor between a warm-up and the measurement it leads
to; their failures are written into the file they would have filled, never raised. The
engine summary is taken once per results directory: a repetition runs the same binary
with the same settings, and its own counters are in the cell's telemetry. The host's is
taken once a day per host and kept, with its time, in oltplab's cache: a run copies the
one it refers to and says when it was taken. Both sample vmstat for one second, not their
default five: the per-second series are oltplab's own.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from oltplab.base.errors import EngineError
from oltplab.base.hostinfo import describe_host
from oltplab.base.sizes import duration_text
from oltplab.engines.cache import cache_root
from oltplab.engines.hosts import Host
from oltplab.engines.server import Server
from oltplab.store.directory import ResultsDir
from oltplab.store.files import write_atomic

TIMEOUT_SECONDS = 120
# A host summary older than this is taken again.
MAX_AGE = timedelta(days=1)
HOST_IDENTITY = ("machine", "hostname", "kernel", "cpu_model", "cores", "memory_bytes")


def _capture(command: list[str], output: Path, machine: Host) -> bool:
    try:
        result = machine.run(command, timeout=TIMEOUT_SECONDS)
    except EngineError as exc:
        output.write_text(f"{exc}\n")
        return False
    output.write_text(result.stdout + (f"\n[stderr]\n{result.stderr}" if result.stderr else ""))
    return result.returncode == 0


def host_identity() -> dict[str, object]:
    """What makes a summary this host's: a machine changed in any of these is another."""
    facts = describe_host()
    identity: dict[str, object] = {key: facts[key] for key in HOST_IDENTITY}
    try:
        identity["machine_id"] = Path("/etc/machine-id").read_text().strip()
    except OSError:
        identity["machine_id"] = None
    return identity


def cache_files(identity: dict[str, object]) -> tuple[Path, Path]:
    """Where a host's summary and the record of when it was taken are kept."""
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    folder = cache_root() / "host-summary"
    return folder / f"{key}.txt", folder / f"{key}.json"


@dataclass(frozen=True)
class HostSummary:
    """The host summary a run refers to, or why it has none."""

    taken_at: datetime | None
    missing: str | None = None

    def describe(self, now: datetime) -> str:
        if self.taken_at is None:
            return f"host summary: {self.missing}"
        age = duration_text((now - self.taken_at).total_seconds())
        return f"host summary: pt-summary taken {self.taken_at:%Y-%m-%d %H:%M} UTC ({age} ago)"


def host_summary(results: Path, now: datetime | None = None) -> HostSummary:
    """pt-summary of this host into the results, from oltplab's cache when one taken
    here less than a day ago is there (else taken now and cached): it changes only with
    the machine, and takes seconds of a quiet host at every run."""
    now = now or datetime.now(UTC)
    output = ResultsDir(results).host_summary
    identity = host_identity()
    cached, facts = cache_files(identity)
    taken_at = _taken_at(facts, identity)
    if taken_at is None or not cached.is_file() or now - taken_at > MAX_AGE:
        if shutil.which("pt-summary") is None:
            return HostSummary(None, "pt-summary not installed")
        if not _capture(["pt-summary", "--sleep=1"], output, Host()):
            return HostSummary(None, f"pt-summary failed (see {output.name})")
        taken_at = now
        cached.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(cached, output.read_text())
        write_atomic(facts, json.dumps({"taken_at": now.isoformat(), "host": identity}))
        return HostSummary(taken_at)
    write_atomic(output, cached.read_text())
    return HostSummary(taken_at)


def _taken_at(facts: Path, identity: dict[str, object]) -> datetime | None:
    """When the cached summary was taken, if it is this host's (a damaged record is none)."""
    try:
        said = json.loads(facts.read_text())
        if said["host"] != identity:
            return None
        return datetime.fromisoformat(said["taken_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def engine_summary(server: Server, output: Path) -> str | None:
    """pt-mysql-summary of a running engine, run where the engine runs; the reason when it
    could not be taken.

    The password goes through an option file only we can read, never the command line
    (which any user can list).
    """
    tool = server.client_protocol.summary_tool
    if tool is None or output.is_file():
        return None  # PostgreSQL's settings are in the .vars.txt file
    if not server.machine.has(tool):
        return f"{tool} not installed"
    options = server.client_options()
    command = ["pt-mysql-summary", f"--defaults-file={options.path}", "--sleep=1"]
    with options.present():
        captured = _capture(command, output, server.machine)
    if captured:
        return None
    return f"pt-mysql-summary failed (see {output.name})"
