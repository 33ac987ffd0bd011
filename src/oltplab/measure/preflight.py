"""Checks made before anything is provisioned, of what the spec asks of this host: memory
for each buffer pool, the engines' sources, a sysbench that runs every workload, disk for
the datasets, each endpoint answering and taking its login, and the engines' binaries
fetched. Each check is one function of what was asked; a new one is one more in
HOST_CHECKS."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from oltplab.base.errors import SpecError
from oltplab.base.hostinfo import memory_bytes
from oltplab.base.sizes import format_size
from oltplab.engines.endpoint import check_endpoints
from oltplab.engines.supplier import cached, check_sources, supply
from oltplab.measure.gates import check_workloads
from oltplab.spec import Spec
from oltplab.store.files import format_bytes, free_bytes
from oltplab.workloads.kinds import kinds_used


@dataclass(frozen=True)
class Asked:
    """What a run asks of this host: its spec (and where it came from), the folder engines
    keep their data in, the engines this run (or shard) measures, and the sysbench found."""

    spec: Spec
    origin: str
    work: Path
    measured: frozenset[str]
    sysbench: str
    say: Callable[[str], None]


def check_memory(asked: Asked) -> None:
    spec, memory = asked.spec, memory_bytes()
    if not memory or all(engine.is_endpoint for engine in spec.engines):
        return
    for index, tier in enumerate(spec.tier_list):
        pool = spec.resolve(tier).buffer_pool
        if pool >= memory:
            where = f"tiers[{index}].buffer_pool" if spec.tiers else "config.buffer_pool"
            raise SpecError(
                f"{asked.origin}: {where}: {format_size(pool)} is larger than this machine's "
                f"memory ({memory / 1024**3:.1f}G); choose a smaller buffer pool"
            )


def check_engine_sources(asked: Asked) -> None:
    check_sources(asked.spec.engines)


def check_workload_scripts(asked: Asked) -> None:
    check_workloads(asked.spec, asked.sysbench, asked.origin)


def check_dataset_space(asked: Asked) -> None:
    """Said before anything is loaded: an engine's dataset, with its snapshot beside it,
    fits in the free space where engines keep their data."""
    spec = asked.spec
    if all(engine.is_endpoint for engine in spec.engines):
        return
    needed = 2 * sum(kind.dataset_bytes(spec) for kind in kinds_used(spec))
    free = free_bytes(asked.work)
    if needed > free:
        datasets = ", ".join(kind.describe_dataset(spec) for kind in kinds_used(spec))
        raise SpecError(
            f"{asked.origin}: [dataset]: {datasets} takes about {format_bytes(needed / 2)} in "
            f"an engine and as much again in its snapshot, {format_bytes(needed)} in all; "
            f"{asked.work} has {format_bytes(free)} free. Make the dataset smaller or free space"
        )


def check_measured_endpoints(asked: Asked) -> None:
    # A shard checks the endpoints it measures: another's may be out of its node's reach.
    check_endpoints([engine for engine in asked.spec.engines if engine.name in asked.measured])


def fetch_binaries(asked: Asked) -> None:
    """Every engine's binaries in the cache before the results directory is made: a source
    that cannot give them (a version its registry lacks, a package of another checksum) is
    bad input, said once, not a failed cell at every thread count."""
    for engine in asked.spec.engines:
        if engine.name not in asked.measured or engine.is_endpoint or cached(engine) is not None:
            continue
        asked.say(f"{engine.name}: fetching its binaries into the cache (once; a minute or so)")
        supply(engine)


# In the order they run: fetching, the only check that may take minutes, last.
HOST_CHECKS: tuple[Callable[[Asked], None], ...] = (
    check_memory,
    check_engine_sources,
    check_workload_scripts,
    check_dataset_space,
    check_measured_endpoints,
    fetch_binaries,
)


def preflight(asked: Asked) -> None:
    for check in HOST_CHECKS:
        check(asked)
