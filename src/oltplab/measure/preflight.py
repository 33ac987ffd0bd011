"""Checks made before anything is provisioned, of what the spec asks of this host: memory
for each buffer pool, the engines' sources, a sysbench that runs every workload, disk for
the datasets, each endpoint answering and taking its login, and the engines' binaries
fetched."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from oltplab.base.errors import SpecError
from oltplab.base.hostinfo import memory_bytes
from oltplab.base.sizes import format_size
from oltplab.engines.endpoint import check_endpoints
from oltplab.engines.supplier import cached, check_sources, supply
from oltplab.measure.workloads import check_workloads
from oltplab.spec import Spec
from oltplab.store.files import format_bytes, free_bytes
from oltplab.sysbench.driver import find_sysbench
from oltplab.sysbench.kinds import kinds_used


def preflight(
    spec: Spec, origin: str, work: Path, measured: set[str], say: Callable[[str], None]
) -> str:
    """Host-dependent checks; returns the sysbench binary. `measured` names the engines
    this run (or shard) measures: only theirs are fetched."""
    memory = memory_bytes()
    provisioned = any(not engine.is_endpoint for engine in spec.engines)
    for index, tier in enumerate(spec.tier_list):
        pool = spec.resolve(tier).buffer_pool
        if provisioned and memory and pool >= memory:
            where = f"tiers[{index}].buffer_pool" if spec.tiers else "config.buffer_pool"
            raise SpecError(
                f"{origin}: {where}: {format_size(pool)} is larger than this machine's memory "
                f"({memory / 1024**3:.1f}G); choose a smaller buffer pool"
            )
    check_sources(spec.engines)
    sysbench = find_sysbench()
    check_workloads(spec, sysbench, origin)
    check_dataset_space(spec, work, origin)
    # A shard checks the endpoints it measures: another's may be out of its node's reach.
    check_endpoints([engine for engine in spec.engines if engine.name in measured])
    fetch_binaries(spec, measured, say)
    return sysbench


def fetch_binaries(spec: Spec, measured: set[str], say: Callable[[str], None]) -> None:
    """Every engine's binaries in the cache before the results directory is made: a source
    that cannot give them (a version its registry lacks, a package of another checksum) is
    bad input, said once, not a failed cell at every thread count. Last of the checks, as
    the only one that may take minutes."""
    for engine in spec.engines:
        if engine.name not in measured or engine.is_endpoint or cached(engine) is not None:
            continue
        say(f"{engine.name}: fetching its binaries into the cache (once; a minute or so)")
        supply(engine)


def check_dataset_space(spec: Spec, work: Path, origin: str) -> None:
    """Said before anything is loaded: an engine's dataset, with its snapshot beside it,
    fits in the free space where engines keep their data."""
    if all(engine.is_endpoint for engine in spec.engines):
        return
    needed = 2 * sum(kind.dataset_bytes(spec) for kind in kinds_used(spec))
    free = free_bytes(work)
    if needed > free:
        datasets = ", ".join(kind.describe_dataset(spec) for kind in kinds_used(spec))
        raise SpecError(
            f"{origin}: [dataset]: {datasets} takes about {format_bytes(needed / 2)} in an "
            f"engine and as much again in its snapshot, {format_bytes(needed)} in all; "
            f"{work} has {format_bytes(free)} free. Make the dataset smaller or free space"
        )
