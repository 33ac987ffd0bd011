"""The per-run A/A canary's verdict: the first engine's identical twin (spec/twin_canary.py),
an engine named after it that ran the very binary it ran (the sha256 the ledger recorded),
against the first engine, on the run's own measure and margin, as a precision search
judges any comparison. Nothing differs between the two, so SAME says the host could tell
differences of the margin apart in this run, and DIFFERENT that it could not: the run is
then marked "host unfit for this margin", with the figure, wherever a verdict is shown."""

from __future__ import annotations

from dataclasses import dataclass

from oltplab.analysis.dataset import Dataset
from oltplab.analysis.estimate import Comparison
from oltplab.analysis.points import Point, Points
from oltplab.analysis.precision import DIFFERENT, SAME, UNKNOWN, decide
from oltplab.spec.twin_canary import SUFFIX


@dataclass(frozen=True)
class CanaryPoint:
    point: Point  # the twin's
    comparison: Comparison  # twin against the engine it twins, 90% interval
    verdict: str


@dataclass(frozen=True)
class Canary:
    twin: str
    of: str
    margin_pct: float
    measure_label: str
    points: list[CanaryPoint]
    cells: int  # the twin's measured cells
    all_cells: int  # every measured cell of the run

    @property
    def verdict(self) -> str:
        verdicts = {p.verdict for p in self.points}
        if DIFFERENT in verdicts:
            return DIFFERENT
        return SAME if verdicts == {SAME} else UNKNOWN

    @property
    def unfit(self) -> bool:
        return self.verdict == DIFFERENT

    @property
    def worst(self) -> CanaryPoint | None:
        """The point that decided the verdict: a DIFFERENT one if any, else the widest."""
        chosen = [p for p in self.points if p.verdict == self.verdict] or self.points
        return max(chosen, key=lambda p: abs(p.comparison.diff_pct), default=None)

    @property
    def cost(self) -> str:
        share = self.cells / self.all_cells if self.all_cells else 0.0
        return f"it took {self.cells} of {self.all_cells} cells ({share:.0%} of the measuring)"

    def describe(self) -> str:
        """One line: the verdict, its figure, and what the canary cost."""
        worst = self.worst
        figure = "no paired rounds" if worst is None else _figure(worst)
        if self.unfit:
            return (
                f"Host unfit for this margin: the canary ({self.twin}, an identical twin of "
                f"{self.of}) differed by {figure} beyond ±{self.margin_pct:g}% on "
                f"{self.measure_label}; no DIFFERENT verdict of this run holds at this margin "
                f"(ask for a wider one, or measure on a quieter host); {self.cost}."
            )
        return (
            f"Canary ({self.twin}, an identical twin of {self.of}): {self.verdict} against "
            f"±{self.margin_pct:g}% on {self.measure_label}, {figure}; {self.cost}."
        )


def _figure(point: CanaryPoint) -> str:
    scenario, tier, _, threads = point.point
    where = f"{scenario} {tier} {threads} thread{'s' * (threads != 1)}"
    return f"{point.comparison.with_interval()} ({where})"


def _same_binary(dataset: Dataset, twin: str, of: str) -> bool:
    """Whether `twin` ran the very server binary `of` ran, as the ledger recorded: the name
    says which engine a canary twins, its binary that it is one (any engine may be named
    `<first>-canary`)."""
    if of not in dataset.engines:
        return False
    recorded = dataset.engines[twin].binary_sha256
    return bool(recorded) and recorded == dataset.engines[of].binary_sha256


def canary_of(points: Points, default_margin_pct: float) -> Canary | None:
    """The run's canary on these points' measure, if it measured one: judged at the margin
    the run measured to, else at the default the caller judges by."""
    dataset = points.dataset
    margin_pct = dataset.target.margin_pct if dataset.target else default_margin_pct
    twins = [
        n
        for n in dataset.engines
        if n.endswith(SUFFIX) and _same_binary(dataset, n, n.removesuffix(SUFFIX))
    ]
    if not twins:
        return None
    twin = twins[0]
    of = twin.removesuffix(SUFFIX)
    samples = points.samples()
    found = []
    for point, sample in sorted(samples.items()):
        scenario, tier, engine, threads = point
        reference = (scenario, tier, of, threads)
        if engine != twin or reference not in samples:
            continue
        comparison, verdict = decide(
            sample, samples[reference], margin_pct, dataset.paired, f"{point}|{reference}"
        )
        found.append(CanaryPoint(point, comparison, verdict))
    measured = [c for c in dataset.cells if c.measured]
    return Canary(
        twin,
        of,
        margin_pct,
        points.measure.label,
        found,
        sum(c.engine == twin for c in measured),
        len(measured),
    )
