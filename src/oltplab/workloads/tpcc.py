"""The TPC-C-like kind: an order-entry load on the nine tables of the TPC-C specification
(revision 5.11) at `[dataset] warehouses = W`, loaded in parallel and measured by tpcc.lua
beside this module (which runs tpcc_common.lua's helpers and tpcc_load.lua's loader from
its folder), in MySQL-family and PostgreSQL dialects; the loader creates the tables from
the dialect's DDL file there (tpcc_mysql.sql, tpcc_postgresql.sql). It is not TPC-C (no
keying or think times, no audit), so its figure is NOPM, New-Orders per minute, counted
twice: from the committed New-Orders, and from how far the districts' next order ids moved
over the cell.

Each thread is a terminal bound to a home warehouse; a workload may use the first
`options.warehouses` of those loaded. Each thread deals itself decks of transactions (10
New-Order, 10 Payment, 1 each of Order-Status, Delivery and Stock-Level, or the workload's
`mix` in percent), reshuffled per deck. The NURand constants C are fixed per run, from the
protocol's seed, and stored with the workload's facts; the load's C for C_LAST belongs to
the dataset.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from oltplab.base.metrics import (
    CONSISTENCY_CHECKED,
    CONSISTENCY_FAILED,
    NEW_ORDERS,
    NOPM,
    NOPM_DISTRICTS,
    TPM,
    WAREHOUSES_ACTIVE,
)
from oltplab.spec import Spec, WorkloadSpec
from oltplab.spec.fields import Scalar
from oltplab.sysbench.driver import Call
from oltplab.sysbench.transactions import KindResults, TransactionType, merged
from oltplab.workloads.kind import WorkloadKind

SCRIPT = Path(__file__).with_name("tpcc.lua")
# The script loads these from its folder; their digests join the script's in the facts, so
# that a cell's definition changes with any of them.
HELPERS = tuple(
    SCRIPT.with_name(name)
    for name in ("tpcc_common.lua", "tpcc_load.lua", "tpcc_mysql.sql", "tpcc_postgresql.sql")
)
TYPES = ("new_order", "payment", "order_status", "delivery", "stock_level")
# The specification's deck of 23 (clause 5.2.4.2's minimum shares, met by a deck).
DECK = {"new_order": 10, "payment": 10, "order_status": 1, "delivery": 1, "stock_level": 1}
ITEMS = 100_000
# Rows loaded per warehouse (clause 4.3.3.1): stock, customers, history, orders, new
# orders, about 10 order lines an order, districts and the warehouse itself.
ROWS_PER_WAREHOUSE = 100_000 + 30_000 + 30_000 + 30_000 + 9_000 + 300_000 + 10 + 1
# What a warehouse takes on disk, measured here with 10 warehouses: MySQL 8.0.31 held 926
# MB of tables and indexes and 646 MB of binary log from the load (PostgreSQL 15: 1.1 GB of
# tables and indexes).
BYTES_PER_WAREHOUSE = 160_000_000
ITEM_BYTES = 16_000_000
DEFAULT_WAREHOUSES = 1
# Clause 2.1.6.1: C_LAST's run-time C minus its load-time C lies in [65, 119], never 96 or
# 112.
C_LAST_DELTAS = tuple(d for d in range(65, 120) if d not in (96, 112))
# The script's options that oltplab sets: the deck from the workload's `mix` (its sum
# checked, its shares in run.json) and the NURand constants from [protocol] seed.
OWN_OPTIONS = ("mix", "c_last", "c_id", "ol_i_id", "c_last_load")
# Tries of a transaction after a deadlock or serialization error: 0 gives up at the first.
MAX_RETRIES = 1000
# The most New-Orders a minute a warehouse can give under the specification's keying and
# think times (clause 4.2's ten terminals a warehouse): a run's NOPM a warehouse against
# it is go-tpc's "efficiency", and far above 100% says how far the run is from a TPC-C
# setting, which this kind does not claim to be.
SPEC_NOPM_PER_WAREHOUSE = 12.86


def efficiency_pct(nopm: float | None, warehouses: float | None) -> float | None:
    """NOPM a warehouse as a share of the specification's ceiling (go-tpc's efficiency)."""
    if nopm is None or not warehouses:
        return None
    return 100 * nopm / (SPEC_NOPM_PER_WAREHOUSE * warehouses)


@dataclass(frozen=True)
class NURandConstants:
    c_last_load: int
    c_last: int
    c_id: int
    ol_i_id: int


def load_c_last(warehouses: int) -> int:
    """The load's C for C_LAST: part of the dataset, the same wherever it is loaded."""
    return random.Random(f"tpcc load {warehouses}").randrange(256)


def nurand_constants(seed: int, warehouses: int) -> NURandConstants:
    """The run's constants, from the protocol's seed, with C_LAST's delta in the allowed set."""
    rng = random.Random(f"tpcc run {seed}")
    load = load_c_last(warehouses)
    delta = rng.choice(C_LAST_DELTAS)
    c_last = load + delta if load + delta <= 255 else load - delta
    return NURandConstants(load, c_last, rng.randrange(1024), rng.randrange(8192))


def loaded_warehouses(spec: Spec) -> int:
    return spec.dataset.warehouses or DEFAULT_WAREHOUSES


def used_warehouses(spec: Spec, workload: WorkloadSpec) -> int:
    used = workload.options.get("warehouses", loaded_warehouses(spec))
    return int(used) if isinstance(used, int | float) else loaded_warehouses(spec)


def deck(workload: WorkloadSpec) -> dict[str, int]:
    """Cards per transaction type in a thread's deck: the specification's 23, or the mix's
    percentages as a deck of 100."""
    if workload.mix is None:
        return dict(DECK)
    return {name: workload.mix.get(name, 0) for name in TYPES}


class Tpcc(WorkloadKind):
    name: ClassVar[str] = "tpcc"
    example: ClassVar[str] = '{name = "tpcc", kind = "tpcc"}'
    transaction_types: ClassVar[tuple[str, ...]] = TYPES
    headline_measure: ClassVar[str] = NOPM
    # Four warehouses (2.1M rows, wide ones, with their indexes) loaded in 48 s by MySQL
    # 8.0.31 here with two threads; PostgreSQL 15 took 30-35 s a warehouse.
    rows_loaded_per_second: ClassVar[float] = 30_000

    def check(self, spec: Spec, workload: WorkloadSpec) -> str | None:
        if problem := super().check(spec, workload):
            return problem
        for key in workload.options:
            if (spelled := key.replace("-", "_")) in OWN_OPTIONS:
                source = "the workload's mix" if spelled == "mix" else "[protocol] seed"
                return f"options.{key}: set by oltplab from {source}; give that instead"
        retries = workload.options.get("retries")
        if retries is not None and (
            isinstance(retries, bool)
            or not isinstance(retries, int)
            or not 0 <= retries <= MAX_RETRIES
        ):
            return (
                f"options.retries: expected a whole number from 0 to {MAX_RETRIES:,} (tries "
                f"after a deadlock or serialization error), got {retries!r}"
            )
        used = workload.options.get("warehouses")
        loaded = loaded_warehouses(spec)
        if used is not None and (
            isinstance(used, bool) or not isinstance(used, int) or not 1 <= used <= loaded
        ):
            return (
                f"options.warehouses: expected a whole number from 1 to the {loaded} loaded "
                f"([dataset] warehouses), got {used!r}"
            )
        return None

    def dataset_key(self, spec: Spec) -> str:
        warehouses = loaded_warehouses(spec)
        return f"tpcc warehouses={warehouses} c_last_load={load_c_last(warehouses)}"

    def dataset_rows(self, spec: Spec) -> int:
        return ITEMS + loaded_warehouses(spec) * ROWS_PER_WAREHOUSE

    def dataset_bytes(self, spec: Spec) -> int:
        return ITEM_BYTES + loaded_warehouses(spec) * BYTES_PER_WAREHOUSE

    def describe_dataset(self, spec: Spec) -> str:
        warehouses = loaded_warehouses(spec)
        return f"TPC-C-like, {warehouses:,} warehouse{'s' if warehouses > 1 else ''}"

    def prepare(self, spec: Spec, action: str, cores: int) -> Call:
        warehouses = loaded_warehouses(spec)
        options: dict[str, Scalar] = {
            "warehouses": warehouses,
            "c_last_load": load_c_last(warehouses),
        }
        return Call(str(SCRIPT), action, threads=max(1, min(warehouses, cores)), options=options)

    def call(self, spec: Spec, workload: WorkloadSpec, threads: int) -> Call:
        constants = nurand_constants(spec.protocol.seed, loaded_warehouses(spec))
        options = {
            "warehouses": used_warehouses(spec, workload),
            "mix": ",".join(str(deck(workload)[name]) for name in TYPES),
            "c_last": constants.c_last,
            "c_id": constants.c_id,
            "ol_i_id": constants.ol_i_id,
            **{k: v for k, v in workload.options.items() if k != "warehouses"},
        }
        return Call(str(SCRIPT), "run", threads, options=options)

    def warm_ups(self, spec: Spec, workload: WorkloadSpec) -> list[tuple[WorkloadSpec, int]]:
        return [(workload, spec.protocol.warmup_rw_seconds)]

    def facts(self, spec: Spec, workload: WorkloadSpec) -> dict[str, Any]:
        cards = deck(workload)
        constants = nurand_constants(spec.protocol.seed, loaded_warehouses(spec))
        return {
            "script": str(SCRIPT),
            "helpers_sha256": {
                path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in HELPERS
            },
            "warehouses": used_warehouses(spec, workload),
            "warehouses_loaded": loaded_warehouses(spec),
            "mix": {name: round(100 * n / sum(cards.values()), 2) for name, n in cards.items()},
            "nurand": vars(constants),
            "read_only": False,
        }

    def results(self, output: str) -> KindResults | None:
        return read_tpcc(output)


# --- the Lua side's lines (tpcc.lua) ------------------------------------------------------

_PREFIX = "oltplab tpcc: "
_SECOND = re.compile(
    r"second (\d+) thread (\d+) (\w+) committed=(\d+) rollbacks=(\d+) retries=(\d+) "
    r"gave_up=(\d+) errors=(\S+) latency=(\S+)$"
)
_HOME = re.compile(r"thread (\d+) home (\d+)$")
_DISTRICTS = re.compile(r"district_orders (before|after)=(\d+)$")
_CONSISTENCY = re.compile(r"consistency (\d) (ok|failed)\s*(.*)$")
_TOTAL_TIME = re.compile(r"^\s*total time:\s+([\d.]+)s", re.MULTILINE)


def _pairs(text: str, key: type[float] | type[str]) -> tuple[tuple[Any, int], ...]:
    if text == "-":
        return ()
    found = []
    for pair in text.split(","):
        name, _, count = pair.rpartition(":")
        found.append((key(name), int(count)))
    return tuple(found)


def read_tpcc(output: str) -> KindResults | None:
    """A cell's figures from its raw output: per type over the whole cell, NOPM both ways,
    TPM, the committed New-Orders per second, and the consistency conditions checked and
    any that failed."""
    parts: list[TransactionType] = []
    per_second: dict[int, int] = {}
    homes: set[int] = set()
    districts: dict[str, int] = {}
    problems: list[str] = []
    checked: set[int] = set()
    failed: set[int] = set()
    for line in output.splitlines():
        if not line.startswith(_PREFIX):
            continue
        said = line[len(_PREFIX) :].strip()
        if m := _SECOND.match(said):
            second, name = int(m.group(1)), m.group(3)
            committed = int(m.group(4))
            part = TransactionType(
                name,
                committed=committed,
                rollbacks=int(m.group(5)),
                retries=int(m.group(6)),
                gave_up=int(m.group(7)),
                errors=_pairs(m.group(8), str),
                histogram=_pairs(m.group(9), float),
            )
            parts.append(part)
            if name == "new_order":
                per_second[second] = per_second.get(second, 0) + committed
        elif m := _HOME.match(said):
            homes.add(int(m.group(2)))
        elif m := _DISTRICTS.match(said):
            districts[m.group(1)] = int(m.group(2))
        elif m := _CONSISTENCY.match(said):
            checked.add(int(m.group(1)))
            if m.group(2) == "failed":
                failed.add(int(m.group(1)))
                problems.append(f"consistency condition {m.group(1)} failed: {m.group(3)}")
    total = _TOTAL_TIME.search(output)
    if not parts or total is None:
        return None
    minutes = float(total.group(1)) / 60
    types = sorted(merged(parts), key=lambda t: TYPES.index(t.name) if t.name in TYPES else 99)
    new_orders = sum(t.committed for t in types if t.name == "new_order")
    figures = {
        NOPM: new_orders / minutes,
        TPM: sum(t.committed for t in types) / minutes,
        WAREHOUSES_ACTIVE: float(len(homes)),
        CONSISTENCY_CHECKED: float(len(checked)),
        CONSISTENCY_FAILED: float(len(failed)),
    }
    if {"before", "after"} <= districts.keys():
        figures[NOPM_DISTRICTS] = (districts["after"] - districts["before"]) / minutes
    # Epoch seconds to the sysbench clock, whose second k covers (k-1, k] of the run.
    first = min(per_second, default=0)
    series = tuple(
        (NEW_ORDERS.name, second - first + 1, float(n)) for second, n in sorted(per_second.items())
    )
    return KindResults(
        transactions=tuple(types),
        metrics=figures,
        series=series,
        problems=tuple(problems),
    )
