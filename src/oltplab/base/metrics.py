"""The names of telemetry, in one place: what the collectors store, the analysis reads and
the report shows.

A metric is a (source, name) pair, as the ledger's telemetry table keeps it. Sources are
the OS tools and the engine probe; names are the tools' own columns (per device or CPU as
`<device>:<column>`), the engine's status variables, and a few the probe derives.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Metric(NamedTuple):
    source: str
    name: str


ENGINE = "engine"  # the engine probe: status counters and what it derives from them
LOAD = "load"  # what the server, sysbench and everything else used of the machine
SYSBENCH = "sysbench"  # what sysbench itself prints each interval beyond throughput
# A workload kind's own per-second series (sysbench/transactions.py).
WORKLOAD = "workload"
IOSTAT = "iostat"
VMSTAT = "vmstat"
MPSTAT = "mpstat"

NEW_ORDERS = Metric(WORKLOAD, "new_order")  # New-Orders committed each second (tpcc)

# --- what the OS tools print -----------------------------------------------------------------
CPU_USER = Metric(MPSTAT, "all:%usr")
CPU_SYSTEM = Metric(MPSTAT, "all:%sys")
CPU_IOWAIT = Metric(MPSTAT, "all:%iowait")
CONTEXT_SWITCHES = Metric(VMSTAT, "cs")
# iostat prints a line per device; its names are "<device>:rMB/s" and "<device>:wMB/s".
DISK_READ_COLUMN = ":rMB/s"
DISK_WRITTEN_COLUMN = ":wMB/s"

# --- what the load sampler sees, each second ----------------------------------------------
SERVER_CPU = Metric(LOAD, "server_cpu")  # CPUs the server used (1.0: one CPU all second)
SERVER_SWITCHES = Metric(LOAD, "server_switches")  # its threads' context switches a second
SYSBENCH_CPU = Metric(LOAD, "sysbench_cpu")
OTHER_CPU = Metric(LOAD, "other_cpu")  # CPUs used by anything not ours
STEAL = Metric(LOAD, "steal")  # CPUs the hypervisor gave to someone else
RUN_QUEUE = Metric(LOAD, "run_queue")  # runnable tasks on the host
# Results written before the load sampler had the server's CPU from the engine probe.
SERVER_CPU_OF_PROBE = Metric(ENGINE, "server_cpu_seconds")
SERVER_CPU_ANY = frozenset({SERVER_CPU, SERVER_CPU_OF_PROBE})

# --- what the engine probe derives -----------------------------------------------------------
HISTORY_LENGTH = Metric(ENGINE, "history_list_length")
CHECKPOINT_AGE = Metric(ENGINE, "checkpoint_age")  # bytes
DIRTY_PAGES = Metric(ENGINE, "dirty_pages")
# ... and the status variables it keeps under their own names
THREADS_RUNNING = Metric(ENGINE, "Threads_running")
# Bytes of redo per second; PostgreSQL's WAL is its counterpart.
REDO_BYTES = frozenset(
    {Metric(ENGINE, "Innodb_os_log_written"), Metric(ENGINE, "pg_stat_wal.wal_bytes")}
)

# --- what says whether the engine's state has settled (base/stationarity.py) ---------------
FREE_PAGES = Metric(ENGINE, "Innodb_buffer_pool_pages_free")
DATA_PAGES = Metric(ENGINE, "Innodb_buffer_pool_pages_data")
TOTAL_PAGES = Metric(ENGINE, "Innodb_buffer_pool_pages_total")
DEAD_TUPLES = Metric(ENGINE, "pg_stat_user_tables.n_dead_tup")  # of the benchmark's tables
# Buffers PostgreSQL writes a second: by checkpoints, by the background writer, by backends.
BUFFERS_WRITTEN = tuple(
    Metric(ENGINE, f"pg_stat_bgwriter.{column}")
    for column in ("buffers_checkpoint", "buffers_clean", "buffers_backend")
)
STATE = frozenset(
    {HISTORY_LENGTH, CHECKPOINT_AGE, DIRTY_PAGES, FREE_PAGES, DATA_PAGES, TOTAL_PAGES, DEAD_TUPLES}
    | set(BUFFERS_WRITTEN)
)


def is_pending(metric: tuple[str, str]) -> bool:
    """Reads, writes or syncs the engine has queued and not finished (InnoDB's *_pending_*)."""
    return metric[0] == ENGINE and "pending" in metric[1]


# --- what sysbench prints in rate mode (open loop) -------------------------------------------
QUEUE_LENGTH = Metric(SYSBENCH, "queue_length")  # events offered, waiting for a thread
CONCURRENCY = Metric(SYSBENCH, "concurrency")  # threads busy

# The metrics the analysis reads (the rest stays in the ledger and the raw files).
_ANALYSED = frozenset(
    {
        CPU_USER,
        CPU_SYSTEM,
        CPU_IOWAIT,
        CONTEXT_SWITCHES,
        *SERVER_CPU_ANY,
        SERVER_SWITCHES,
        SYSBENCH_CPU,
        OTHER_CPU,
        STEAL,
        RUN_QUEUE,
        HISTORY_LENGTH,
        CHECKPOINT_AGE,
        DIRTY_PAGES,
        THREADS_RUNNING,
        *REDO_BYTES,
        QUEUE_LENGTH,
        CONCURRENCY,
        NEW_ORDERS,
    }
)


def is_disk(metric: tuple[str, str], column: str) -> bool:
    """A device's line of iostat for the column (DISK_READ_COLUMN or DISK_WRITTEN_COLUMN)."""
    return metric[0] == IOSTAT and metric[1].endswith(column)


def analysed(source: str, name: str) -> bool:
    if (source, name) in STATE or is_pending((source, name)):
        return True
    return (source, name) in _ANALYSED or any(
        is_disk((source, name), column) for column in (DISK_READ_COLUMN, DISK_WRITTEN_COLUMN)
    )


# --- what a workload kind measures ---------------------------------------------------------
# ... and of a whole cell (sysbench/transactions.py) -------------
NOPM = "nopm"  # New-Orders committed a minute (the TPC-C-like kind)
NOPM_DISTRICTS = "nopm_districts"  # the same, from how far the districts' next order ids moved
WAREHOUSES_ACTIVE = "warehouses_active"  # home warehouses of the cell's terminals
TPM = "tpm"  # transactions of every type committed a minute (go-tpc's tpmTotal)
# The data's consistency conditions checked after the cell, and those that failed.
CONSISTENCY_CHECKED = "consistency_checked"
CONSISTENCY_FAILED = "consistency_failed"
KIND_METRICS = (
    NOPM, NOPM_DISTRICTS, WAREHOUSES_ACTIVE, TPM, CONSISTENCY_CHECKED, CONSISTENCY_FAILED,
)  # fmt: skip


# --- what a comparison can be made on ------------------------------------------------------


class Measure(NamedTuple):
    """A figure points are compared on: TPS (per second), a per-transaction cost, each
    second's value weighted by that second's transactions, or a workload kind's own
    per-second series (scaled: New-Orders a second to NOPM)."""

    name: str
    label: str
    unit: str
    higher_is_better: bool
    per_transaction: frozenset[Metric] = frozenset()  # the load series it divides by TPS
    scale: float = 1.0
    series: Metric | None = None  # the telemetry series it is, second by second

    def format(self, value: float) -> str:
        return f"{value:,.1f}" if abs(value) < 1000 else f"{value:,.0f}"


TPS = Measure("tps", "TPS", "tps", True)
CPU_PER_TXN = Measure(
    "cpu_us_per_txn", "server CPU per transaction", "µs", False, SERVER_CPU_ANY, 1e6
)
SWITCHES_PER_TXN = Measure(
    "switches_per_txn", "server context switches per transaction", "", False,
    frozenset({SERVER_SWITCHES}),
)  # fmt: skip
NOPM_MEASURE = Measure("nopm", "NOPM", "New-Orders/min", True, scale=60.0, series=NEW_ORDERS)
MEASURES = {m.name: m for m in (TPS, CPU_PER_TXN, SWITCHES_PER_TXN, NOPM_MEASURE)}


class Target(NamedTuple):
    """What a run measures until: every comparison decided against +-margin_pct on the
    measure, within budget_seconds of the run's time (None: no limit)."""

    margin_pct: float
    measure: Measure
    budget_seconds: float | None = None


def measure_named(name: str) -> Measure:
    if name not in MEASURES:
        raise ValueError(f"{name!r}: expected one of {', '.join(MEASURES)}")
    return MEASURES[name]


# --- what sysbench printed for a whole run ---------------------------------------------------
# Its latency is at the percentile the run asked for (--percentile): a figure is named after
# it (`lat_p99_ms`), so that two percentiles never share a column or a table.
LATENCY_PATTERN = r"^lat_p(\d+)_ms$"
_LATENCY = re.compile(LATENCY_PATTERN)


def latency_metric(percentile: int) -> str:
    return f"lat_p{percentile}_ms"


def percentile_of(name: str) -> int | None:
    """The percentile a latency figure's name says; None for any other figure."""
    match = _LATENCY.match(name)
    return int(match.group(1)) if match else None
