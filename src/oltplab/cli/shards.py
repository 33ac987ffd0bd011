"""Commands that spread a matrix over machines: `plan`, `merge` and `cancel` (`submit` is in
`oltplab.cli.submit`)."""

from __future__ import annotations

from functools import partial

from oltplab.base.metrics import Measure
from oltplab.base.telling import Said
from oltplab.cli.app import console, errors, say, tell
from oltplab.cli.options import bound
from oltplab.distribute.merge import MergeAsked, merged
from oltplab.distribute.schedulers import CancelAsked, cancelled
from oltplab.distribute.shard_plan import PlanAsked, planned
from oltplab.spec import Spec


@bound(PlanAsked)
def plan(given: PlanAsked) -> None:
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
    tell(planned(given, partial(_rounds, calibrate=given.calibrate)))


def _rounds(spec: Spec, margin: float, chosen: Measure, *, calibrate: bool) -> tuple[Said, ...]:
    """The rounds every comparison needs on this host, its calibration measured first when
    it has none and --calibrate asks for one (calibrate's own run, drawn as it draws it)."""
    from oltplab.experiments.rounds_plan import calibration_wanted, rounds_said

    wanted = calibration_wanted(spec, calibrate)
    if wanted is not None:
        from oltplab.cli.runs import run_calibration

        say(f"--calibrate: {wanted.command} (about 10 minutes)", errors)
        run_calibration(wanted.asked())
    return rounds_said(spec, margin, chosen)


@bound(MergeAsked)
def merge(given: MergeAsked) -> None:
    """Shards of one spec made one results directory: one ledger, the raw files in the
    2026 layout, run.json with every machine's facts, each machine's canaries."""
    with console.status("merging"):
        told = merged(given)
    tell(told)


@bound(CancelAsked)
def cancel(given: CancelAsked) -> None:
    """Cancel every queued or running shard of a distributed run, through the scheduler
    that runs it; what the shards measured so far stays, and submitting again resumes."""
    tell(cancelled(given))
