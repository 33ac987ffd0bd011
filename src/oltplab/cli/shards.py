"""Commands that spread a matrix over machines: `plan`, `merge` and `cancel` (`submit` is in
`oltplab.cli.submit`)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, get_args

import typer
from rich.table import Table

from oltplab.base.errors import OltplabError
from oltplab.base.metrics import Measure
from oltplab.base.sizes import duration_text
from oltplab.cli.app import MeasureOption, console, errors, flag, measure_of, unlike
from oltplab.cli.vocabulary import MARGIN, margin_option, parse_percent
from oltplab.distribute.layout import is_distributed, read_distributed, shards_of
from oltplab.distribute.merge import merge as merge_shards
from oltplab.distribute.schedulers import scheduler_named
from oltplab.plan.blocks import assign, blocks, serial_seconds, shard_seconds
from oltplab.plan.lengths import ONE_REPETITION, ExpectedLengths, expected_spec
from oltplab.plan.preparing import assumed
from oltplab.spec import Spec, load_spec, revised_spec
from oltplab.spec.catalog import CATALOG
from oltplab.spec.distribute import BlockDimension
from oltplab.store.directory import REPLAY_JSON


class CellLength(StrEnum):
    fixed = "fixed"
    adaptive = "adaptive"


# More shards than this is no machine count anyone has; past it, dealing blocks alone
# would take gigabytes before saying so.
MAX_SHARDS = 10_000
ShardsOption = Annotated[
    int, typer.Option("--shards", "-n", min=1, max=MAX_SHARDS, help="How many shards.")
]


def plan(
    spec_path: Annotated[Path, typer.Argument(help="The spec file (TOML).", metavar="SPEC")],
    shards: ShardsOption = 1,
    block: Annotated[
        str | None,
        typer.Option(
            help="Try another cut than the spec's [distribute] block, e.g. "
            "placement,tier,workload,threads."
        ),
    ] = None,
    margin: Annotated[
        str | None,
        margin_option(
            "also print the paired rounds and the machine time this host needs for every "
            "comparison to be decided against ±PCT, from its calibration (oltplab calibrate)."
        ),
    ] = None,
    measure: MeasureOption = "tps",
    calibrate: Annotated[
        bool,
        flag(
            "--calibrate",
            help="With --margin on a host without a calibration of the spec's order of "
            "rounds: measure one first (oltplab calibrate, about 10 minutes), then plan.",
        ),
    ] = False,
    repetitions: Annotated[
        int | None,
        typer.Option(min=1, max=1000, help="Plan this many repetitions instead of the spec's."),
    ] = None,
    stop: Annotated[
        CellLength | None,
        typer.Option(
            help="Plan cells of fixed length or adaptive ones (ending once settled) instead "
            "of the spec's [protocol] stop."
        ),
    ] = None,
    replayed: Annotated[
        Path | None,
        typer.Option(
            "--from",
            metavar="RESULTS",
            help="Adaptive: expect cells and warm-ups to keep the share of their seconds "
            "that oltplab replay found on this run (else the most conservative share of the "
            "project's long-cell corpus, said to be assumed).",
        ),
    ] = None,
) -> None:
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
    spec = load_spec(spec_path)
    # Every option is checked before anything is printed: an error is then the only line.
    margin_pct = parse_percent(margin, MARGIN) if margin is not None else None
    chosen = measure_of(measure)
    given: list[str] = []
    revised: dict[str, dict[str, object]] = {"distribute": {}, "protocol": {}}
    if block is not None:
        dims = [part.strip() for part in block.split(",") if part.strip()]
        known = get_args(BlockDimension)
        if unknown := [d for d in dims if d not in known]:
            raise OltplabError(
                f"--block {block}: {', '.join(unknown)} is not a dimension; expected some of "
                f"{', '.join(known)}, comma-separated (engines and repetitions are never cut)"
            )
        revised["distribute"]["block"] = dims
        given.append(f"--block {block}")
    if repetitions is not None:
        revised["protocol"]["repetitions"] = repetitions
        given.append(f"--repetitions {repetitions}")
    if stop is not None:
        revised["protocol"]["stop"] = stop.value
        given.append(f"--stop {stop.value}")
    if given:
        spec = revised_spec(spec, f"{spec_path} with {' '.join(given)}", **revised)
    fixed = spec
    lengths = None
    if spec.protocol.stop == "adaptive":
        lengths = (
            ExpectedLengths.replayed(replayed, replayed / REPLAY_JSON)
            if replayed
            else ExpectedLengths.assumed()
        )
        spec = expected_spec(spec, lengths)
    elif replayed is not None:
        raise OltplabError("--from RESULTS: only adaptive cells use it; add --stop adaptive")
    rounds = (
        _plan_precision(spec, margin_pct, chosen, calibrate) if margin_pct is not None else None
    )
    found = blocks(spec)
    dealt = assign(found, shards)
    cut = "/".join(spec.distribute.block) or "nothing"
    table = Table(title=f"{spec.name}: {len(found)} block(s) ({cut}) on {shards} shard(s)")
    for column in ("shard", "blocks", "cells", "measure + warm-up", "prepare", "wall time"):
        table.add_column(column, justify="right" if column != "blocks" else "left", overflow="fold")
    walls = []
    for index, (mine, (work, prepare_s)) in enumerate(
        zip(dealt, shard_seconds(spec, dealt), strict=True), start=1
    ):
        walls.append(work + prepare_s)
        table.add_row(
            str(index),
            "; ".join(b.label for b in mine) or "(idle)",
            str(sum(len(b.cells) for b in mine)),
            duration_text(work),
            duration_text(prepare_s),
            duration_text(work + prepare_s),
        )
    console.print(table)
    console.print(_overall(spec, shards, max(walls)), highlight=False)
    if shards > 1:
        console.print(
            "prepare: each engine's dataset prepared once, by the first shard to reach it (each "
            "shard starts from another engine), and copied by the others from the shared "
            f"snapshot store (assumed: {assumed(spec)})",
            highlight=False,
        )
    if lengths is not None:
        protocol = spec.protocol
        console.print(
            f"adaptive cells: about {protocol.measure_seconds} s of "
            f"{fixed.protocol.measure_seconds} s, warm-ups {protocol.warmup_ro_seconds} s and "
            f"{protocol.warmup_rw_seconds} s of {fixed.protocol.warmup_ro_seconds} s and "
            f"{fixed.protocol.warmup_rw_seconds} s ({lengths.basis})",
            highlight=False,
        )
        console.print(
            f"verdicts that share changed in its replay: {lengths.verdicts()}",
            highlight=False,
        )
        if protocol.repetitions == 1:
            errors.print(ONE_REPETITION, highlight=False, markup=False)
        fixed = fixed.model_copy(update={"protocol": fixed.protocol.model_copy(
            update={"stop": "fixed"})})  # fmt: skip
        longest = max(sum(times) for times in shard_seconds(fixed, assign(blocks(fixed), shards)))
        console.print(f"fixed-length cells: {_overall(fixed, shards, longest)}", highlight=False)
    if shards > len(found):
        errors.print(
            f"only {len(found)} block(s): {shards - len(found)} shard(s) would be idle; cut "
            'finer with [distribute] block = ["placement", "tier", "workload", "threads"] '
            "(or try --block)",
            highlight=False,
            markup=False,
        )
    for said in rounds or ():
        console.print(said, highlight=False)
    if shards == 1:
        console.print(
            f"Next: oltplab run {spec_path} --results DIR (on this machine; --shards N plans "
            "the matrix over N machines)",
            highlight=False,
            soft_wrap=True,
        )
        return
    console.print(
        f"Next: oltplab submit slurm {spec_path} --shards {shards} --results DIR "
        f"(or, on each machine, oltplab run {spec_path} --shard K/{shards} --results DIR "
        "--snapshots SHARED)",
        highlight=False,
        soft_wrap=True,
    )


def _overall(spec: Spec, shards: int, longest: float) -> str:
    """The whole matrix on one machine, and on the shards (their longest)."""
    serial = serial_seconds(spec)
    speedup = serial / longest
    versus = (
        f"{speedup:.1f}x faster" if speedup >= 1
        else f"{1 / speedup:.1f}x slower: every shard sets up its own engines and datasets"
    )  # fmt: skip
    return f"one machine: about {duration_text(serial)}" + (
        f"; {shards} shards: {duration_text(longest)} (the longest shard; {versus})"
        if shards > 1
        else ""
    )


def merge(
    shards: Annotated[
        list[Path],
        typer.Argument(
            metavar="SHARDS",
            help="Shard results directories, a distributed run's directory, or a results "
            "volume holding shard-K folders (Kubernetes).",
        ),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="The merged results directory.")],
) -> None:
    """Shards of one spec made one results directory: one ledger, the raw files in the
    2026 layout, run.json with every machine's facts, each machine's canaries."""
    paths = [shard for path in shards for shard in shards_of(path)]
    with console.status("merging"):
        merged = merge_shards(paths, output)
    # One spec is merge's own rule; each shard's machine differs by design.
    unlike(paths, refuse=False, expected=("host",))
    machines = sorted({m for s in merged for m in s.machines.values() if m})
    console.print(
        f"{output}: {len(merged)} shard(s) merged, {sum(len(s.done) for s in merged)} done "
        f"cell(s), measured on {', '.join(machines) or 'one machine'}",
        highlight=False,
    )
    console.print(f"Next: oltplab report {output}", highlight=False)


def cancel(
    results: Annotated[
        Path,
        typer.Argument(
            metavar="RESULTS", help="A distributed run's directory (oltplab submit wrote it)."
        ),
    ],
) -> None:
    """Cancel every queued or running shard of a distributed run, through the scheduler
    that runs it; what the shards measured so far stays, and submitting again resumes."""
    if not is_distributed(results):
        raise OltplabError(
            f"{results}: not a distributed run (no distribute.json); oltplab submit writes one"
        )
    distributed = read_distributed(results.resolve())
    stopped = scheduler_named(distributed.scheduler).cancel(distributed)
    said = ", ".join(map(str, stopped)) if stopped else "none was queued or running"
    console.print(f"cancelled shard(s): {said}", highlight=False)
    console.print(
        f"Next: oltplab status {results}; the same oltplab submit command resumes the run",
        highlight=False,
    )


def _plan_precision(
    spec: Spec, margin: float, chosen: Measure, calibrate: bool
) -> tuple[Table | str, ...]:
    """Rounds and machine time for every comparison to be decided, from this host's
    round-to-round spread of each measure: enough for the 90% interval's half-width to
    fall under half the margin, so that no difference ends SAME and one of twice the margin
    ends DIFFERENT, each nine times in ten or more (tests/fast/test_precision.py). Made
    before the plan is printed, so that what stops it (no calibration) is the only line."""
    from oltplab.analysis.precision import rounds_needed
    from oltplab.cli.margins import DEFAULT_BUDGET_MINUTES, trials_here, which_margin
    from oltplab.experiments.calibrate import calibration_here
    from oltplab.experiments.until_answered import rounds_order, with_rounds
    from oltplab.plan import build_plan, plan_seconds

    order = rounds_order(spec)
    calibration = calibration_here(order)
    if calibration is None:
        engine = next((e.name for e in spec.engines if e.name in CATALOG), "ENGINE")
        # The order always named: calibrate's own default is another (sliced).
        needed = f"oltplab calibrate {engine} --order {order}"
        if not calibrate or engine == "ENGINE":
            raise OltplabError(
                f"--margin: the spec's rounds are {order}, and this host has no calibration "
                f"of {order} rounds to plan with; run `{needed}` first (about 10 minutes), "
                + ("or pass --calibrate to run it now" if engine != "ENGINE" else "then plan")
            )
        from oltplab.cli.runs import run_calibration

        errors.print(f"--calibrate: {needed} (about 10 minutes)", highlight=False)
        run_calibration(engine, None, 5, 30, [1, 4], "oltp_read_only", "tps", order)
        calibration = calibration_here(order)
        assert calibration is not None  # stored by run_calibration, or it raised

    def seconds_of(rounds: int) -> tuple[float, int]:
        spec_of, _ = with_rounds(spec, rounds)
        sessions = build_plan(spec_of)
        cells = {c.key for s in sessions for c in s.cells}
        return plan_seconds(spec_of, sessions, cells), len(sessions)

    # What one more round costs: its cells, and its warm-ups unless the engines alternate.
    (one, sessions_one), (two, sessions_two) = seconds_of(1), seconds_of(2)
    sessions = sessions_two - sessions_one
    round_seconds = two - one + sessions * calibration.session_overhead_s
    table = Table(
        title=f"Rounds for every comparison to be decided against ±{margin:g}% on this host"
    )
    for column in ("measure", "round-to-round spread", "rounds", "machine time"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    for name, spread in calibration.round_spread_pct.items():
        rounds = rounds_needed(spread, margin / 2)
        marked = f"{name} (chosen)" if name == chosen.name else name
        table.add_row(
            marked,
            f"±{spread:.2f}%",
            str(rounds) if rounds else "over 10,000",
            duration_text(rounds * round_seconds) if rounds else "-",
        )
    overhead = calibration.session_overhead_s
    what = {
        "alternating": f"cells back to back, {overhead:.1f} s apart, the engines kept running",
        "sliced": "cells at once in short time slots, the engines kept running",
    }.get(order, f"warm-ups, cells, and {overhead:.0f} s a session to restore and start")
    said = (
        f"Planned with this host's calibration of {calibration.describe()} (`oltplab "
        f"calibrations` lists it). One round: {sessions} session(s), "
        f"{duration_text(round_seconds)} ({what}, as "
        f"calibrated with {calibration.cell_seconds} s cells). With that many rounds no "
        f"difference ends SAME and one of ±{2 * margin:g}% ends DIFFERENT, each nine times in "
        f"ten or more; `oltplab run SPEC --margin {margin:g}%` stops as soon as each "
        "comparison is decided."
    )
    chosen_spread = calibration.round_spread_pct.get(chosen.name)
    budget = spec.protocol.budget or DEFAULT_BUDGET_MINUTES * 60.0
    advice = (
        ()
        if chosen_spread is None
        else which_margin(chosen_spread, round_seconds, budget, chosen.label)
    )
    return (table, said, *advice, *trials_here(margin))
