"""How long machines take to have their engines' datasets, prepared or taken from a
shared snapshot store.

Alone, a machine prepares each of its engines itself. Shards of one distributed run share
a snapshot store (`oltplab submit` always gives them one; `run --shard --snapshots DIR`
does by hand): each engine's dataset is prepared once, by the first shard to reach it, and
copied by the others. Shards set their engines up in an order of their own, shard K from
its K-th engine on, so that at the start every engine is being prepared somewhere rather
than all shards waiting on the first one. The canary's engine comes first everywhere: the
canary is measured before anything else.

The figures rest on assumptions, said wherever they count: a dataset's rows are what its
workload kinds say (workloads/kinds.py), and so is how many rows a second their loader
loads (sbtest's PREPARE_ROWS_PER_SECOND: 400,000 rows in one table, one thread, took 5.8 s
on this 2-core machine; a large one prepares 20 tables at once), a dataset takes the
disk its kinds say (an sbtest row about ROW_BYTES: 20 x 5M rows fit the 2026 report's 32G
tier and not its 12G one), and a machine copies a snapshot to or from the
store at about COPY_BYTES_PER_SECOND, whatever the others copy at the same time.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from oltplab.plan import Session
from oltplab.spec import Spec
from oltplab.workloads.kind import PREPARE_ROWS_PER_SECOND, ROW_BYTES
from oltplab.workloads.kinds import kinds_used

COPY_BYTES_PER_SECOND = 200e6
# Setting an engine up before its dataset: initialising a datadir and a first start (MySQL
# 8.0 takes 10-20 s here, MariaDB a few).
ENGINE_SETUP_S = 15.0


def assumed(spec: Spec) -> str:
    """The assumptions behind the figures, for the spec's workload kinds."""
    loading = ", ".join(
        f"{kind.rows_loaded_per_second:,.0f} rows prepared a second"
        + (f" ({kind.name})" if kind.rows_loaded_per_second != PREPARE_ROWS_PER_SECOND else "")
        for kind in kinds_used(spec)
    )
    return (
        f"{loading}, {ROW_BYTES} bytes a row, "
        f"snapshots copied at {COPY_BYTES_PER_SECOND / 1e6:.0f} MB/s"
    )


def prepare_seconds(spec: Spec, engines: int) -> float:
    """Setting up this many engines and preparing their datasets on one machine
    (endpoints need neither)."""
    loading = sum(
        kind.dataset_rows(spec) / kind.rows_loaded_per_second for kind in kinds_used(spec)
    )
    return engines * (ENGINE_SETUP_S + loading)


def copy_seconds(spec: Spec) -> float:
    """One dataset's snapshot written to, or read from, the store."""
    return sum(kind.dataset_bytes(spec) for kind in kinds_used(spec)) / COPY_BYTES_PER_SECOND


def preparing_order(engines: Sequence[str], shard_index: int) -> list[str]:
    """The order shard K (1-based) sets its engines up in: its K-th on, round the list."""
    if not engines:
        return []
    start = (shard_index - 1) % len(engines)
    return [*engines[start:], *engines[:start]]


def prepared_engines(spec: Spec, sessions: list[Session]) -> list[str]:
    """The engines these sessions need a dataset of, in the spec's order (endpoints have
    their own)."""
    used = {s.engine for s in sessions}
    return [e.name for e in spec.engines if e.name in used and not e.is_endpoint]


def preparing_ahead(spec: Spec, sessions: list[Session], shard_index: int) -> list[tuple[str, str]]:
    """The (engine, host)s a shard sharing a snapshot store sets up before measuring, in
    its own order."""
    hosts: dict[str, list[str]] = {}
    for session in sessions:
        if session.host not in hosts.setdefault(session.engine, []):
            hosts[session.engine].append(session.host)
    order = preparing_order(prepared_engines(spec, sessions), shard_index)
    return [(name, host) for name in order for host in hosts[name]]


def shared_prepare_seconds(
    spec: Spec, shard_engines: Sequence[Sequence[str]], first: str | None = None
) -> list[float]:
    """Per shard, when its last engine's dataset is on its disk: each engine is prepared
    (and its snapshot published) by the first shard to reach it; a shard that reaches it
    later waits for that, then copies it. `first` is the canary's engine, which every
    shard prepares or copies before anything else."""
    prepare = prepare_seconds(spec, 1)
    copy = copy_seconds(spec)
    orders = []
    for index, engines in enumerate(shard_engines, start=1):
        rest = preparing_order([e for e in engines if e != first], index)
        orders.append([first, *rest] if first is not None else rest)
    published: dict[str, float] = {}
    done = [0.0] * len(orders)
    # The shard that is earliest goes next, so that whoever reaches an engine first
    # prepares it, as the store's lock decides.
    waiting = [(0.0, shard, 0) for shard in range(len(orders))]
    while waiting:
        now, shard, step = heapq.heappop(waiting)
        if step == len(orders[shard]):
            done[shard] = now
            continue
        engine = orders[shard][step]
        if engine in published:
            now = max(now, published[engine]) + copy
        else:
            now += prepare + copy
            published[engine] = now
        heapq.heappush(waiting, (now, shard, step + 1))
    return done
