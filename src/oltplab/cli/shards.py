"""Commands that spread a matrix over machines: `plan`, `merge` and `cancel` (`submit` is in
`oltplab.cli.submit`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from oltplab.analysis.comparability import alike_notes, unlike
from oltplab.base.asking import MARGIN
from oltplab.base.given import measure_of, parse_percent
from oltplab.base.metrics import Measure
from oltplab.base.telling import Told
from oltplab.cli.app import MeasureOption, console, errors, flag, tell
from oltplab.cli.options import bound
from oltplab.cli.vocabulary import margin_option
from oltplab.distribute.layout import shards_of
from oltplab.distribute.merge import merge as merge_shards
from oltplab.distribute.schedulers import cancel_run
from oltplab.distribute.shard_plan import PlanRevision, ShardPlan, dealt, expected_matrix
from oltplab.plan.lengths import ONE_REPETITION
from oltplab.spec import Spec, load_spec


class CellLength(StrEnum):
    fixed = "fixed"
    adaptive = "adaptive"


# More shards than this is no machine count anyone has; past it, dealing blocks alone
# would take gigabytes before saying so.
MAX_SHARDS = 10_000
ShardsOption = Annotated[
    int, typer.Option("--shards", "-n", min=1, max=MAX_SHARDS, help="How many shards.")
]


@dataclass(frozen=True)
class PlanOptions:
    spec_path: Annotated[Path, typer.Argument(help="The spec file (TOML).", metavar="SPEC")]
    shards: ShardsOption = 1
    block: Annotated[
        str | None,
        typer.Option(
            help="Try another cut than the spec's [distribute] block, e.g. "
            "placement,tier,workload,threads."
        ),
    ] = None
    margin: Annotated[
        str | None,
        margin_option(
            "also print the paired rounds and the machine time this host needs for every "
            "comparison to be decided against ±PCT, from its calibration (oltplab calibrate)."
        ),
    ] = None
    measure: MeasureOption = "tps"
    calibrate: Annotated[
        bool,
        flag(
            "--calibrate",
            help="With --margin on a host without a calibration of the spec's order of "
            "rounds: measure one first (oltplab calibrate, about 10 minutes), then plan.",
        ),
    ] = False
    repetitions: Annotated[
        int | None,
        typer.Option(min=1, max=1000, help="Plan this many repetitions instead of the spec's."),
    ] = None
    stop: Annotated[
        CellLength | None,
        typer.Option(
            help="Plan cells of fixed length or adaptive ones (ending once settled) instead "
            "of the spec's [protocol] stop."
        ),
    ] = None
    replayed: Annotated[
        Path | None,
        typer.Option(
            "--from",
            metavar="RESULTS",
            help="Adaptive: expect cells and warm-ups to keep the share of their seconds "
            "that oltplab replay found on this run (else the most conservative share of the "
            "project's long-cell corpus, said to be assumed).",
        ),
    ] = None


@bound(PlanOptions)
def plan(given: PlanOptions) -> None:
    """The blocks of a matrix dealt to shards, with the estimated wall time of each.

    A block is every engine and repetition of one (placement, tier, workload) by default,
    so every engine comparison is measured on one machine. Estimates count warm-ups,
    measurements, canaries and each shard's datasets: prepared on one machine, or copied
    from the shared snapshot store that another shard published (rows a second, row size
    and copy speed assumed, said). Adaptive cells and warm-ups count the share of their
    seconds a replayed run kept (--from), or an assumed one, with the verdicts that share
    changed in its replay; the first repetition of each block runs whole. The fixed-length
    figure is printed beside.
    """
    spec = load_spec(given.spec_path)
    # Every option is checked before anything is printed: an error is then the only line.
    margin = parse_percent(given.margin, MARGIN) if given.margin is not None else None
    chosen = measure_of(given.measure)
    stop = given.stop.value if given.stop is not None else None
    revision = PlanRevision(given.block, given.repetitions, stop, given.replayed)
    matrix = expected_matrix(spec, given.spec_path, revision)
    rounds = _rounds(matrix.spec, margin, chosen, given.calibrate) if margin is not None else ()
    _print_plan(dealt(matrix, given.shards), rounds, given.spec_path)


def _print_plan(found: ShardPlan, rounds: tuple[Table | str, ...], spec_path: Path) -> None:
    table = Table(title=found.title)
    for column in ("shard", "blocks", "cells", "measure + warm-up", "prepare", "wall time"):
        table.add_column(column, justify="right" if column != "blocks" else "left", overflow="fold")
    for row in found.rows():
        table.add_row(*row)
    console.print(table)
    for said in (found.overall(), found.preparing(), *found.adaptive()):
        if said is not None:
            console.print(said, highlight=False)
    if found.matrix.lengths is not None and found.matrix.spec.protocol.repetitions == 1:
        errors.print(ONE_REPETITION, highlight=False, markup=False)
    if (fixed := found.fixed_length()) is not None:
        console.print(fixed, highlight=False)
    if (idle := found.idle()) is not None:
        errors.print(idle, highlight=False, markup=False)
    for part in rounds:
        console.print(part, highlight=False)
    shards = len(found.shards)
    console.print(
        f"Next: oltplab run {spec_path} --results DIR (on this machine; --shards N plans the "
        "matrix over N machines)"
        if shards == 1
        else f"Next: oltplab submit slurm {spec_path} --shards {shards} --results DIR (or, on "
        f"each machine, oltplab run {spec_path} --shard K/{shards} --results DIR --snapshots "
        "SHARED)",
        highlight=False,
        soft_wrap=True,
    )


@dataclass(frozen=True)
class MergeOptions:
    shards: Annotated[
        list[Path],
        typer.Argument(
            metavar="SHARDS",
            help="Shard results directories, a distributed run's directory, or a results "
            "volume holding shard-K folders (Kubernetes).",
        ),
    ]
    output: Annotated[Path, typer.Option("--output", "-o", help="The merged results directory.")]


@bound(MergeOptions)
def merge(given: MergeOptions) -> None:
    """Shards of one spec made one results directory: one ledger, the raw files in the
    2026 layout, run.json with every machine's facts, each machine's canaries."""
    paths = [shard for path in given.shards for shard in shards_of(path)]
    with console.status("merging"):
        merged = merge_shards(paths, given.output)
    # One spec is merge's own rule; each shard's machine differs by design.
    tell(Told(tuple(alike_notes(unlike(paths, refuse=False, expected=("host",))))))
    machines = sorted({m for s in merged for m in s.machines.values() if m})
    console.print(
        f"{given.output}: {len(merged)} shard(s) merged, {sum(len(s.done) for s in merged)} "
        f"done cell(s), measured on {', '.join(machines) or 'one machine'}",
        highlight=False,
    )
    console.print(f"Next: oltplab report {given.output}", highlight=False)


@dataclass(frozen=True)
class CancelOptions:
    results: Annotated[
        Path,
        typer.Argument(
            metavar="RESULTS", help="A distributed run's directory (oltplab submit wrote it)."
        ),
    ]


@bound(CancelOptions)
def cancel(given: CancelOptions) -> None:
    """Cancel every queued or running shard of a distributed run, through the scheduler
    that runs it; what the shards measured so far stays, and submitting again resumes."""
    stopped = cancel_run(given.results)
    said = ", ".join(map(str, stopped)) if stopped else "none was queued or running"
    console.print(f"cancelled shard(s): {said}", highlight=False)
    console.print(
        f"Next: oltplab status {given.results}; the same oltplab submit command resumes the run",
        highlight=False,
    )


def _rounds(spec: Spec, margin: float, chosen: Measure, calibrate: bool) -> tuple[Table | str, ...]:
    """The rounds every comparison needs on this host, and which margin to ask for: made
    before the plan is printed, so that what stops it (no calibration) is the only line."""
    from oltplab.cli.margins import DEFAULT_BUDGET_MINUTES, trials_here, which_margin
    from oltplab.experiments.rounds_plan import calibration_wanted, rounds_plan

    wanted = calibration_wanted(spec, calibrate)
    if wanted is not None:
        from oltplab.base.metrics import TPS
        from oltplab.cli.runs import run_calibration
        from oltplab.experiments.calibrate import CalibrationAsked, calibration_folder

        errors.print(f"--calibrate: {wanted.command} (about 10 minutes)", highlight=False)
        folder = calibration_folder(wanted.engine)
        # The calibrate command's defaults.
        run_calibration(
            CalibrationAsked(
                wanted.engine, folder, 5, 30, [1, 4], "oltp_read_only", TPS, wanted.order
            )
        )
    found = rounds_plan(spec, margin)
    table = Table(
        title=f"Rounds for every comparison to be decided against ±{margin:g}% on this host"
    )
    for column in ("measure", "round-to-round spread", "rounds", "machine time"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    for row in found.rows(chosen.name):
        table.add_row(*row)
    spread = found.calibration.round_spread_pct.get(chosen.name)
    budget = spec.protocol.budget or DEFAULT_BUDGET_MINUTES * 60.0
    advice = (
        () if spread is None else which_margin(spread, found.round_seconds, budget, chosen.label)
    )
    return (table, found.describe(), *advice, *trials_here(margin))
