"""A shard's run: the canary cell at its start, the shard's blocks, the canary at its end.

The canary is the spec's own engine, dataset and workload at one thread count, measured for
`canary_seconds` into `<shard>/canary/start` and `<shard>/canary/end` (results directories
of their own). It shares the shard's prepared engines, so it costs a short run, not a
prepare. Comparing machines' canaries says how fast each machine is.
"""

from __future__ import annotations

import logging
import shutil

from oltplab.measure.request import Display, RunRequest
from oltplab.measure.runner import RunOutcome, run
from oltplab.spec import Spec, derived_spec
from oltplab.store.directory import ResultsDir
from oltplab.store.scratch import scratch_root

log = logging.getLogger("oltplab")
CANARY_WARMUP_SECONDS = 10


def canary_spec(spec: Spec) -> tuple[Spec, str]:
    """The canary as a spec of its own, and its text (for its ledger and run.json)."""
    canary = spec.distribute.parsed_canary
    assert canary is not None
    data = spec.model_dump(mode="json", exclude_none=True, exclude={"distribute", "compare"})
    data["engines"] = [e for e in data["engines"] if e["name"] == canary.engine]
    tier = canary.tier or spec.tier_list[0].name
    if data["tiers"]:
        data["tiers"] = [t for t in data["tiers"] if t["name"] == tier]
    data["workloads"] = [w for w in data["workloads"] if w["name"] == canary.workload]
    data["placements"] = data["placements"][:1]
    protocol = data["protocol"]
    protocol.update(
        threads=[canary.threads],
        measure_seconds=spec.distribute.canary_seconds,
        repetitions=1,
        order="as-listed",
        warmup_ro_seconds=min(protocol["warmup_ro_seconds"], CANARY_WARMUP_SECONDS),
        warmup_rw_seconds=min(protocol["warmup_rw_seconds"], CANARY_WARMUP_SECONDS),
    )
    if spec.config.max_connections is None:
        # The engines' settings stay the spec's, whatever thread count the canary uses.
        data["config"]["max_connections"] = spec.resolve(spec.tier_list[0]).max_connections
    return derived_spec(data, f"the canary of {spec.name}")


def _canary(shard_run: RunRequest, moment: str, display: Display) -> None:
    results = shard_run.results.resolve()
    folder = ResultsDir(results).canary_run(moment)
    folder.mkdir(parents=True, exist_ok=True)
    work, shards = scratch_root(folder), scratch_root(results)
    if not work.exists():
        # The shard's engines, prepared once: the canary runs before or after the shard.
        shards.mkdir(parents=True, exist_ok=True)
        work.parent.mkdir(parents=True, exist_ok=True)
        work.symlink_to(shards)
    derived, text = canary_spec(shard_run.spec)
    # The shard's telemetry, snapshots and spec base; none of its other options.
    canary = RunRequest(
        derived, text, f"canary ({moment})", folder, spec_base=shard_run.spec_base,
        telemetry=shard_run.telemetry, snapshots=shard_run.snapshots,
    )  # fmt: skip
    outcome = run(canary, display)
    if outcome.failed:
        log.error("canary (%s) failed: %s", moment, outcome.failed[0].reason)
        display.note(f"[red]canary ({moment}) failed[/red]: {outcome.failed[0].reason}")


def run_shard(request: RunRequest, display: Display) -> RunOutcome:
    """Shard K of N (the request's shard), between its canaries when the spec has one."""
    canaried = request.spec.distribute.parsed_canary is not None
    if canaried:
        _canary(request, "start", display)
    outcome = run(request, display)
    if canaried and not outcome.interrupted:
        _canary(request, "end", display)
    results = request.results.resolve()
    scratch = scratch_root(results)
    local = not scratch.is_relative_to(results)
    if local and not outcome.interrupted and not outcome.failed:
        # A node's temporary storage is not ours to fill: a finished shard leaves none of
        # its datadirs there (an interrupted or failed one keeps them to resume).
        shutil.rmtree(scratch, ignore_errors=True)
    return outcome
