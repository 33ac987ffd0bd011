"""Isolation that is measured, not assumed: the server and sysbench on CPUs of their own,
the datadir's own pages out of the page cache before each session, and a host check that
records and advises, in the spirit of pyperf's `system tune` (it changes nothing of the
host's settings: it says what to change).

CPU sets are taken with affinity (sched_setaffinity): the server's threads on one part of
the CPUs oltplab may use, oltplab itself, sysbench and the collectors on the rest. A
cgroup v2 cpuset would also fence off other users' processes, but creating one is a
change to the host's configuration, which is not oltplab's to make.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from oltplab.base.hostinfo import describe_host

# A process not ours that used this share of a CPU while the host was checked is named.
HEAVY_SHARE = 0.10
CHECK_SECONDS = 0.5


@dataclass(frozen=True)
class CpuSplit:
    """Disjoint CPU sets: the server's, and the client's (sysbench, oltplab, collectors)."""

    server: frozenset[int]
    client: frozenset[int]

    @classmethod
    def of(cls, available: set[int]) -> CpuSplit | None:
        """The upper half of the CPUs for the server (it does the work being measured), the
        rest for the client; None with a single CPU, where there is nothing to split."""
        cpus = sorted(available)
        if len(cpus) < 2:
            return None
        half = len(cpus) // 2
        return cls(frozenset(cpus[half:]), frozenset(cpus[:half]))

    def describe(self) -> str:
        return f"server on CPU {_listed(self.server)}, sysbench on CPU {_listed(self.client)}"


def _listed(cpus: frozenset[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))


def pin_client(split: CpuSplit) -> set[int]:
    """This thread (oltplab's main one), and so every process and thread it starts from now
    on, on the client's CPUs; returns the CPUs it had."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, split.client)
    return before


def pin_server(pid: int, split: CpuSplit) -> None:
    """Every thread of the server and of its child processes on the server's CPUs (threads
    and processes it starts later inherit it)."""
    pids = [pid]
    with contextlib.suppress(OSError):
        pids += [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    for process in pids:
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{process}/task"):
                with contextlib.suppress(OSError):  # a thread may just have ended
                    os.sched_setaffinity(int(task), split.server)


# What isolation does to the page cache, as run.json and the report say it.
PAGE_CACHE_EVICTION = (
    "the datadir's own pages evicted before each session; the rest of the host's page "
    "cache left alone"
)


def evict_page_cache(tree: Path) -> str:
    """The pages of the files under `tree` out of the page cache, so each session reads its
    datadir from the disk alike; what was evicted, and what could not be.

    Only our own files: writing /proc/sys/vm/drop_caches would empty the whole host's
    cache, which every other user of a shared machine would pay for. A dirty page cannot
    be evicted, so each file's pages are written first (the restore has just copied them).
    """
    files, size, failed = 0, 0, []
    # os.walk does not enter linked folders, and O_NOFOLLOW | O_NONBLOCK refuse a link or
    # a FIFO put in a file's place meanwhile: nothing outside the tree, nothing to hang on.
    for folder, _, names in os.walk(tree):
        for name in sorted(names):
            path = Path(folder, name)
            if path.is_symlink() or not path.is_file():
                continue
            try:
                descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError as exc:
                failed.append(f"{name} ({exc.strerror or exc})")
                continue
            try:
                os.fdatasync(descriptor)
                os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
                files += 1
                size += os.fstat(descriptor).st_size
            except OSError as exc:
                failed.append(f"{name} ({exc.strerror or exc})")
            finally:
                os.close(descriptor)
    said = f"evicted {files} file(s), {size / 2**20:,.1f} MiB, of {tree} from the page cache"
    if failed:
        said += f"; not evicted: {', '.join(failed[:3])}" + (" ..." if len(failed) > 3 else "")
    return said


# --- the host check ---------------------------------------------------------------------------


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def _ticks_by_process() -> dict[int, tuple[str, int]]:
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                text = Path(f"/proc/{entry}/stat").read_text()
                fields = text.rsplit(")", 1)[1].split()
                name = text[text.find("(") + 1 : text.rfind(")")]
                found[int(entry)] = (name, int(fields[11]) + int(fields[12]))
    return found


def heavy_processes(seconds: float = CHECK_SECONDS) -> list[tuple[str, float]]:
    """Processes other than this one that used at least HEAVY_SHARE of a CPU over a short
    look: (name, CPUs used), busiest first."""
    before = _ticks_by_process()
    time.sleep(seconds)
    after = _ticks_by_process()
    ticks = os.sysconf("SC_CLK_TCK")
    busy = []
    for pid, (name, now) in after.items():
        if pid == os.getpid() or pid not in before:
            continue
        share = (now - before[pid][1]) / ticks / seconds
        if share >= HEAVY_SHARE:
            busy.append((f"{name} (pid {pid})", share))
    return sorted(busy, key=lambda item: -item[1])


def advice(facts: dict[str, object], heavy: list[tuple[str, float]]) -> list[str]:
    """What would make this host measure more steadily, from its facts; [] when nothing."""
    said = []
    governor = facts.get("cpu_governor")
    if governor not in (None, "not exposed", "performance"):
        said.append(
            f"CPU governor is {governor}: set `performance` (cpupower frequency-set -g "
            "performance) so the clock does not follow the load"
        )
    if facts.get("turbo") == "on":
        said.append(
            "turbo boost is on: its clock depends on temperature and on the other cores' "
            "load; turn it off for steadier numbers"
        )
    if facts.get("transparent_hugepages") == "always":
        said.append(
            "transparent huge pages are `always`: compaction stalls show up as latency "
            "spikes; `madvise` or `never` is steadier for databases"
        )
    swap_used = facts.get("swap_used_bytes")
    if isinstance(swap_used, int) and swap_used > 0:
        said.append(
            f"{swap_used / 2**20:,.0f} MiB of swap is in use: pages the engine touches may "
            "come from disk; free memory or lower the buffer pool"
        )
    for name, share in heavy:
        said.append(
            f"{name} used {share:.0%} of a CPU: other load takes the engine's CPU "
            "(cells it disturbs are flagged interference; --rerun-disturbed measures them again)"
        )
    return said


def turbo() -> str:
    """on, off, or not exposed (a VM usually hides it)."""
    intel = _read("/sys/devices/system/cpu/intel_pstate/no_turbo")
    if intel:
        return "off" if intel == "1" else "on"
    boost = _read("/sys/devices/system/cpu/cpufreq/boost")
    if boost:
        return "on" if boost == "1" else "off"
    return "not exposed"


def swap_used_bytes() -> int:
    values = {}
    for line in _read("/proc/meminfo").splitlines():
        name, _, rest = line.partition(":")
        if name in ("SwapTotal", "SwapFree"):
            values[name] = int(rest.split()[0]) * 1024
    return values.get("SwapTotal", 0) - values.get("SwapFree", 0)


def instructions_counter() -> str:
    """Whether `perf stat -e instructions` counts here: readable, not supported (a VM that
    hides the PMU), or why it could not be asked."""
    if shutil.which("perf") is None:
        return "perf not installed"
    try:
        done = subprocess.run(
            ["perf", "stat", "-e", "instructions", "-x", ",", "--", "true"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"perf did not answer ({exc})"
    said = done.stderr
    if "<not supported>" in said or "<not counted>" in said:
        return "not supported"
    return "readable" if done.returncode == 0 and "instructions" in said else "not permitted"


def check_host() -> tuple[dict[str, object], list[str]]:
    """This host's facts that move the numbers, and the advice they call for."""
    facts: dict[str, object] = {
        **describe_host(),
        "turbo": turbo(),
        "swap_used_bytes": swap_used_bytes(),
        "instructions_counter": instructions_counter(),
    }
    heavy = heavy_processes()
    facts["busy_processes"] = [f"{name}: {share:.0%} of a CPU" for name, share in heavy]
    return facts, advice(facts, heavy)
