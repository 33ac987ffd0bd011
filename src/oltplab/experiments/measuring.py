"""What is said around a run: this host's noise floor against the spec's margin before it,
the comparisons it left undecided and its canary's verdict after it."""

from __future__ import annotations

from pathlib import Path

from oltplab.analysis.canary_verdicts import Canary
from oltplab.base.wording import counted
from oltplab.measure.request import RunRequest


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


def canary_verdict(results: Path) -> Canary | None:
    """The canary's verdict as the report will give it."""
    from oltplab.analysis.dataset import load
    from oltplab.analysis.model import AnalysisOptions, analyse

    return analyse(load([results]), AnalysisOptions()).canary
