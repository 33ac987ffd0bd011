"""Engine telemetry: status counters and InnoDB metrics, once a second (the server process's
CPU is the load sampler's, `telemetry/load.py`).

The probe keeps one extra connection open and samples once a second from just before
sysbench starts; the cell's telemetry clock says how much before, so that each sample is
placed on the second of the run it describes. Its raw file holds one JSON line per sample
with only the values that changed since the previous one, and how long the read took;
`engine_series` turns it into per-second rates and levels.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pymysql

from oltplab.base import metrics
from oltplab.base.errors import EngineError
from oltplab.engines.control import Connection, Control, said
from oltplab.telemetry.sampler import EverySecond, read_lines

# Counters kept as per-second rates (when they moved at all during the cell).
COUNTER_PREFIXES = (
    "Com_",
    "Questions",
    "Queries",
    "Bytes_",
    "Handler_",
    "Innodb_rows_",
    "Innodb_data_",
    "Innodb_os_log_",
    "Innodb_log_w",
    "Innodb_buffer_pool_read",
    "Innodb_buffer_pool_write_requests",
    "Innodb_buffer_pool_pages_flushed",
    "Innodb_row_lock_",
    "Innodb_dblwr_",
    "Created_tmp_",
    "pg_stat_",  # PostgreSQL's statistics views, as PostgresControl names them
)
# Levels kept as they are.
GAUGES = frozenset(
    {
        "Threads_running",
        "Threads_connected",
        "Innodb_buffer_pool_pages_dirty",
        "Innodb_buffer_pool_pages_free",
        "Innodb_buffer_pool_pages_data",
        "Innodb_buffer_pool_pages_total",
        "Innodb_row_lock_current_waits",
        "Innodb_row_lock_time_avg",
        "Innodb_row_lock_time_max",
    }
)
_GAUGE_PARTS = ("pending", "current", "_avg", "_max")
# The levels `_levels` reports; kept even when zero the whole cell.
ENGINE_LEVELS = GAUGES | {
    m.name
    for m in (
        metrics.HISTORY_LENGTH,
        metrics.CHECKPOINT_AGE,
        metrics.DIRTY_PAGES,
        metrics.DEAD_TUPLES,
    )
}
# INNODB_METRICS counters read when enabled (they are by default; oltplab never enables any).
INNODB_METRICS = ("trx_rseg_history_len", "log_lsn_checkpoint_age", "buffer_pool_pages_dirty")
_LSN = re.compile(r"^Log sequence number\s+(\d+)", re.M)
_CHECKPOINT = re.compile(r"^Last checkpoint at\s+(\d+)", re.M)


def _numeric(values: dict[str, str]) -> dict[str, float]:
    found = {}
    for name, value in values.items():
        try:
            found[name] = float(value)
        except ValueError:
            continue
    return found


def checkpoint_age(status: dict[str, float], innodb_status: str | None) -> float | None:
    """Redo written but not yet checkpointed, from whichever source this engine has."""
    if "Innodb_checkpoint_age" in status:  # MariaDB
        return status["Innodb_checkpoint_age"]
    if "pg_checkpoint_age" in status:  # PostgreSQL: WAL since the redo point
        return status["pg_checkpoint_age"]
    if "Innodb_redo_log_current_lsn" in status:  # MySQL 8.0.30+
        return status["Innodb_redo_log_current_lsn"] - status["Innodb_redo_log_checkpoint_lsn"]
    if innodb_status:
        lsn, checkpoint = _LSN.search(innodb_status), _CHECKPOINT.search(innodb_status)
        if lsn and checkpoint:
            return float(int(lsn.group(1)) - int(checkpoint.group(1)))
    return None


class EngineProbe(EverySecond):
    """Samples one engine every second on its own connection until stopped."""

    def __init__(self, connect: Callable[[], Connection], output: Path, reference: float) -> None:
        super().__init__("oltplab-engine-probe", output, reference)
        self._connect = connect

    def run(self) -> None:
        try:
            with self._connect() as control, self.output.open("w") as sink:
                self._sample_until_stopped(control, sink)
        except (EngineError, pymysql.MySQLError, OSError) as exc:
            self.error = said(exc) if isinstance(exc, pymysql.MySQLError) else str(exc)

    def _sample_until_stopped(self, control: Connection, sink: Any) -> None:
        # InnoDB's metrics and status are MySQL-family things; PostgreSQL's status has its own.
        mysql_family = control.protocol.innodb
        metrics = _enabled_metrics(control) if isinstance(control, Control) else []
        previous: dict[str, Any] = {}
        needs_innodb_status: bool | None = None if mysql_family else False
        for second in self.seconds():
            status = _numeric(control.status())
            # The counters were read somewhere in the round trip: how long it took is how
            # far from "t" they may lie (long when other load starves this niced thread).
            took = time.time() - self.reference - second
            if needs_innodb_status is None:
                needs_innodb_status = checkpoint_age(status, None) is None
            sample: dict[str, Any] = {"t": second, "read_s": round(took, 3)}
            derived: dict[str, float] = {}
            if metrics:
                marks = ", ".join(["%s"] * len(metrics))
                for name, count in control.rows(
                    f"SELECT NAME, COUNT FROM information_schema.INNODB_METRICS"
                    f" WHERE NAME IN ({marks})",
                    tuple(metrics),
                ):
                    derived[str(name)] = float(str(count))
            innodb = None
            if needs_innodb_status:
                innodb = str(control.rows("SHOW ENGINE INNODB STATUS")[0][2])
            age = checkpoint_age(status, innodb)
            if age is not None:
                derived["checkpoint_age"] = age
            current = {"status": status, "derived": derived}
            for part, values in current.items():
                old = previous.get(part, {})
                sample[part] = {k: v for k, v in values.items() if old.get(k) != v}
            previous = current
            sink.write(json.dumps(sample) + "\n")
            sink.flush()


def _enabled_metrics(control: Control) -> list[str]:
    marks = ", ".join(["%s"] * len(INNODB_METRICS))
    for enabled in ("STATUS = 'enabled'", "ENABLED = 1"):  # MySQL, MariaDB
        try:
            rows = control.rows(
                f"SELECT NAME FROM information_schema.INNODB_METRICS"
                f" WHERE {enabled} AND NAME IN ({marks})",
                INNODB_METRICS,
            )
        except pymysql.MySQLError:
            continue
        return [str(row[0]) for row in rows]
    return []


# --- reading the raw file back -----------------------------------------------------------------


def read_samples(path: Path) -> list[dict[str, Any]]:
    """The probe's samples with every value filled in (the file only holds changes)."""
    samples = []
    state: dict[str, dict[str, float]] = {"status": {}, "derived": {}}
    for sample in read_lines(path):
        for part in state:
            state[part] = {**state[part], **sample.get(part, {})}
        samples.append({"t": float(sample["t"]), **state})
    return samples


def probe_telemetry(path: Path) -> dict[tuple[str, str], list[tuple[int, float]]]:
    """What a probe has sampled so far (while its cell runs), by (source, metric) as the
    ledger keeps them, its seconds taken as sysbench's (they lie within a second of them)."""
    found: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for second, values in engine_series(read_samples(path)):
        for name, value in values.items():
            found.setdefault((metrics.ENGINE, name), []).append((second, value))
    return found


def _is_counter(name: str) -> bool:
    return name.startswith(COUNTER_PREFIXES) and not any(p in name.lower() for p in _GAUGE_PARTS)


def engine_series(
    samples: Iterable[dict[str, Any]], started_after: float = 0.0
) -> list[tuple[int, dict[str, float]]]:
    """Per-second values on the sysbench clock: rates for counters, levels for gauges.
    The samples' times count from the probe's start, `started_after` seconds after
    sysbench's (negative: before it).

    Names are the status variables' own, plus the ones `oltplab.base.metrics` lists as the
    probe's (the server's CPU, history length, checkpoint age, dirty pages).
    """
    series: list[tuple[int, dict[str, float]]] = []
    previous: dict[str, Any] | None = None
    for sample in samples:
        if previous is not None and sample["t"] > previous["t"]:
            elapsed = sample["t"] - previous["t"]
            values = _levels(sample)
            for name, value in sample["status"].items():
                if _is_counter(name) and name in previous["status"]:
                    delta = value - previous["status"][name]
                    if delta >= 0:
                        values[name] = delta / elapsed
            # Results from before the load sampler: the probe took the server's CPU then.
            if "cpu_seconds" in sample["derived"] and "cpu_seconds" in previous["derived"]:
                delta = sample["derived"]["cpu_seconds"] - previous["derived"]["cpu_seconds"]
                values[metrics.SERVER_CPU_OF_PROBE.name] = max(0.0, delta) / elapsed
            series.append((round(sample["t"] + started_after), values))
        previous = sample
    return series


def _levels(sample: dict[str, Any]) -> dict[str, float]:
    status, derived = sample["status"], sample["derived"]
    values = {
        name: status[name]
        for name in status
        if name in GAUGES or "pending" in name or name == metrics.DEAD_TUPLES.name
    }
    if "Threads_running" in values:
        # The probe's own SHOW GLOBAL STATUS is running when it is counted.
        values["Threads_running"] = max(0.0, values["Threads_running"] - 1)
    history = derived.get("trx_rseg_history_len", status.get("Innodb_history_list_length"))
    if history is not None:
        values[metrics.HISTORY_LENGTH.name] = history
    if "checkpoint_age" in derived:
        values[metrics.CHECKPOINT_AGE.name] = derived["checkpoint_age"]
    dirty = status.get("Innodb_buffer_pool_pages_dirty", derived.get("buffer_pool_pages_dirty"))
    if dirty is not None:
        values[metrics.DIRTY_PAGES.name] = dirty
    return values
