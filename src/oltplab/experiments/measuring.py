"""What `oltplab run` asks for, made a request; and what is said around a run: this host's
noise floor against the spec's margin before it, the comparisons it left undecided and its
canary's verdict after it."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from oltplab.base.asking import (
    MARGIN,
    margin_option,
    option,
    results_option,
    spec_argument,
)
from oltplab.base.errors import OltplabError
from oltplab.base.given import folder_option, parse_duration, parse_percent
from oltplab.base.metrics import MEASURES
from oltplab.base.telling import Note, Said, Told
from oltplab.base.wording import counted
from oltplab.measure.request import RunRequest
from oltplab.plan.blocks import Shard
from oltplab.plan.lengths import ONE_REPETITION
from oltplab.spec import Spec, derived_spec, load_spec
from oltplab.store.scratch import WORK_DIR_ENV
from oltplab.telemetry import registry

if TYPE_CHECKING:  # the analysis loads SciPy, which `status` and --help never need
    from oltplab.analysis.canary_verdicts import Canary


@dataclass(frozen=True, kw_only=True)
class RunAsked:
    spec: Path = spec_argument()
    results: Path = results_option()
    retry_failed: bool = option(
        False, "Run cells that failed in an earlier run again.", "--retry-failed"
    )
    prepare_endpoints: bool = option(
        False,
        "Create the sbtest tables on endpoint engines that lack them (oltplab never writes "
        "to an endpoint unasked).",
        "--prepare",
        "--prepare-endpoints",
    )
    cleanup: bool = option(
        False,
        "After the run, drop the sbtest tables from endpoint engines (sysbench cleanup); "
        "nothing else there is touched.",
        "--cleanup",
    )
    until_cv: float | None = option(
        None,
        "Adaptive: repeat each cell group until the coefficient of variation of its TPS "
        "across repetitions is below this (e.g. 0.03).",
        min=0.0,
    )
    max_repetitions: int = option(10, "Adaptive: at most this many repetitions per cell.", min=2)
    telemetry: str = option(
        registry.DEFAULT,
        "The telemetry devices, by name, separated by commas: `default`, `none`, or any of "
        + registry.described()
        + ". The load sampler (the server's CPU and other processes' load) always runs.",
        metavar="NAMES",
    )
    no_telemetry: bool = option(
        False,
        "Same as --telemetry none (bench/telemetry_overhead.py measures the devices' "
        "overhead this way).",
        "--no-telemetry",
    )
    shard: str | None = option(
        None,
        "Run only shard K of N (K/N): its blocks of the matrix, between its canaries (see "
        "oltplab plan); merge the shards with oltplab merge.",
    )
    profile: bool = option(
        False,
        "Same as adding `perf` to --telemetry: the server profiled on-CPU in every measured "
        "cell (perf record, cpu-clock), folded stacks beside each cell's output (any flame "
        "graph tool reads them); `oltplab bisect --explain` compares two releases' own time "
        "per function and draws their differential flame graph.",
        "--profile",
    )
    snapshots: Path | None = option(
        None,
        "A folder shared by the machines of a distributed run, or by every run on one "
        "machine: each engine's dataset is prepared once, by whichever run needs it first, "
        "and taken from here by the others (default: the folder OLTPLAB_SNAPSHOTS names, if "
        "set).",
    )
    work_dir: Path | None = option(
        None,
        "Node-local folder for the engines' datadirs, snapshots and prepare output "
        "(default: RESULTS/.work; a shard started by oltplab submit uses its node's "
        "temporary storage). Keep it off network storage: the engine's I/O goes there.",
    )
    margin: str | None = margin_option(
        "add paired rounds (sliced and isolated unless the spec names another order) until "
        "every comparison (each engine, tier and workload against the first) is DIFFERENT "
        "or SAME within ±PCT, judged on its 90% interval; undecided ones end UNKNOWN when "
        "--budget runs out. Same as [protocol] target_ci_pct."
    )
    budget: str | None = option(
        None,
        "With --margin: add no round that would end after this much time (90s, 30m, 2h), "
        "counted to the second while the search runs, over its resumes. Same as [protocol] "
        "budget_seconds.",
        metavar="TIME",
    )
    measure: str | None = option(
        None,
        "With --margin: what the comparisons are judged on: tps, cpu_us_per_txn (the "
        "server's CPU per transaction), switches_per_txn, or nopm (New-Orders a minute, the "
        "default when every workload is TPC-C-like; else tps). Same as [protocol] "
        "precision_measure.",
        metavar="NAME",
    )
    rerun_disturbed: bool = option(
        False,
        "Measure again each cell flagged interference (other processes or the hypervisor "
        "took a quarter of a CPU in a tenth of its steady seconds), with its round's other "
        "engines when interleaved; up to twice. The earlier results stay in the ledger, set "
        "aside.",
        "--rerun-disturbed",
    )
    canary: bool = option(
        False,
        "Measure an identical twin of the first engine in every round: its verdict against "
        "the first (SAME, or DIFFERENT: host unfit for this margin) is in the report, the "
        "gate and the site. Costs the twin's cells. Same as [protocol] canary.",
        "--canary",
    )

    def request(self, note: Callable[[str], None]) -> RunRequest:
        """The run asked for, every option checked; `--work-dir` is set for the engines'
        scratch and the canary, which read it from the environment."""
        parsed = with_precision(load_spec(self.spec), self.margin, self.budget, self.measure)
        if self.canary:
            parsed = with_canary(parsed)
        protocol = parsed.protocol
        if protocol.stop == "adaptive" and protocol.repetitions == 1 and self.until_cv is None:
            note(f"note: {ONE_REPETITION}")
        work_dir = folder_option(self.work_dir, "--work-dir")
        if work_dir is not None:
            os.environ[WORK_DIR_ENV] = str(work_dir)
        devices = registry.NONE if self.no_telemetry else self.telemetry
        return RunRequest(
            parsed,
            self.spec.read_text(),
            str(self.spec),
            self.results,
            retry_failed=self.retry_failed,
            prepare_endpoints=self.prepare_endpoints,
            cleanup_endpoints=self.cleanup,
            until_cv=self.until_cv,
            max_repetitions=self.max_repetitions,
            telemetry=registry.chosen(devices + (f",{registry.PROFILE}" if self.profile else "")),
            spec_base=self.spec.resolve().parent,
            shard=Shard.parse(self.shard) if self.shard is not None else None,
            snapshots=folder_option(self.snapshots, "--snapshots"),
            rerun_disturbed=self.rerun_disturbed,
        )


def with_canary(spec: Spec) -> Spec:
    """The spec with its canary: validated again, which adds the first engine's twin."""
    data = spec.model_dump(mode="json", exclude_none=True)
    data["protocol"]["canary"] = True
    return derived_spec(data, "--canary")[0]


def with_precision(spec: Spec, margin: str | None, budget: str | None, measure: str | None) -> Spec:
    """The spec with the command line's precision search: its margin, budget and measure."""
    changes: dict[str, object] = {}
    if margin is not None:
        changes["target_ci_pct"] = parse_percent(margin, MARGIN)
    if budget is not None:
        changes["budget_seconds"] = math.ceil(parse_duration(budget, "--budget"))
        changes["budget_minutes"] = None
    if measure is not None:
        if measure not in MEASURES:
            raise OltplabError(f"--measure {measure}: expected one of {', '.join(MEASURES)}")
        changes["precision_measure"] = measure
    if not changes:
        return spec
    if spec.protocol.target_ci_pct is None and "target_ci_pct" not in changes:
        raise OltplabError("--budget and --measure need --margin PCT (or target_ci_pct)")
    protocol = spec.protocol.model_copy(update=changes)
    return spec.model_copy(update={"protocol": protocol})


def floor_note(request: RunRequest) -> str | None:
    """When this host's noise floor is wider than the margin a plain run is judged at: what
    the run cannot tell apart, and the command that would decide."""
    from oltplab.experiments.calibrate import floor_here

    spec = request.spec
    floor = floor_here(spec.protocol.order)
    margin = spec.compare.margin_pct
    if spec.protocol.target_ci_pct is not None or floor is None or floor.pct <= margin:
        return None
    origin = request.origin if request.origin.endswith(".toml") else "SPEC"
    return (
        f"note: this host's noise floor, {floor.describe()}, is wider than the margin of "
        f"{margin:g}% ([compare] margin_pct): one plain run here cannot tell {margin:g}% "
        f"apart; `oltplab run {origin} --margin {margin:g}%` adds paired rounds until each "
        "comparison is decided"
    )


def undecided_note(request: RunRequest) -> str | None:
    """After a plain run: the comparisons a `--margin` run would decide that this one left
    undecided at the spec's margin (all of them, below three repetitions; on a noisy host,
    most), and that run's command."""
    from oltplab.analysis.dataset import load
    from oltplab.analysis.points import Points
    from oltplab.analysis.precision import UNKNOWN, answers
    from oltplab.base.metrics import Target, measure_named
    from oltplab.experiments.calibrate import floor_here
    from oltplab.workloads.kinds import precision_measure

    if not Path(request.origin).is_file():
        return None  # the demo, which decides a comparison itself next
    dataset = load([request.results])
    if not dataset.cells:
        return None
    margin = request.spec.compare.margin_pct
    measure = measure_named(precision_measure(request.spec))
    verdicts = [
        a.verdict for a in answers(Points(dataset, measure=measure), Target(margin, measure))
    ]
    undecided = verdicts.count(UNKNOWN)
    if not undecided:
        return None
    floor = floor_here(request.spec.protocol.order)
    floor_said = f"; this host's noise floor is {floor.describe()}" if floor else ""
    return (
        f"note: {undecided} of {counted(len(verdicts), 'comparison')} undecided at "
        f"±{margin:g}% ([compare] margin_pct){floor_said}: `oltplab run {request.origin} "
        f"--margin {margin:g}%` adds paired rounds until each is decided"
    )


def after_run(request: RunRequest, interrupted: bool) -> Told:
    """What a finished run adds to its tables: the comparisons a plain run left undecided,
    and the canary's verdict (on stderr when it finds the host unfit)."""
    if interrupted:
        return Told()
    said: list[Said] = []
    plain = request.shard is None and request.spec.protocol.target_ci_pct is None
    if plain and (note := undecided_note(request)):
        said.append(Note(note))
    if request.spec.protocol.canary and (canary := canary_verdict(request.results)):
        said.append(Note(canary.describe()) if canary.unfit else canary.describe())
    return Told(tuple(said))


def canary_verdict(results: Path) -> Canary | None:
    """The canary's verdict as the report will give it."""
    from oltplab.analysis.dataset import load
    from oltplab.analysis.model import AnalysisOptions, analyse

    return analyse(load([results]), AnalysisOptions()).canary
