"""The analysis of a dataset, made once: every table, finding and series a report or an
export shows. Markdown, HTML, charts and exports read this model and compute nothing, so
one figure is the same in every output."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from oltplab.analysis.canary_verdicts import Canary, canary_of
from oltplab.analysis.capacity import Found, read_capacities
from oltplab.analysis.changes import Change, ReleaseSeries, release_series, version_changes
from oltplab.analysis.dataset import CellRecord, Dataset
from oltplab.analysis.findings import Finding, findings
from oltplab.analysis.machines import machine_rows, spread
from oltplab.analysis.openloop import (
    Curve,
    LatencyPoint,
    Omission,
    curves,
    latency_points,
    omissions,
)
from oltplab.analysis.points import Grid, Point, Points, Value, grids
from oltplab.analysis.precision import Answer, answers
from oltplab.analysis.tables import (
    NetworkLatencyRow,
    Pairwise,
    ProgressionRow,
    RelativeTable,
    Repeated,
    Stability,
    differences,
    flagged,
    network_latency,
    pairwise,
    progression,
    relative,
    repetitions,
    stability,
)
from oltplab.analysis.telemetry import (
    OperationRow,
    Timeline,
    notable_cells,
    operation_table,
    timeline,
)
from oltplab.base.errors import OltplabError
from oltplab.base.metrics import MEASURES, TPS, Measure, Target, latency_metric


@dataclass(frozen=True)
class QuotedFloor:
    """A noise floor quoted beside results: what `oltplab calibrate` measured on their host
    for their order of rounds, and which engine and day it measured."""

    pct: float
    engine: str
    order: str
    measured_on: str | None  # the date, ISO; None for a calibration stored without one

    def describe(self) -> str:
        when = f" on {self.measured_on}" if self.measured_on else ""
        return f"±{self.pct:.1f}% ({self.engine}, {self.order} rounds, calibrated{when})"


@dataclass(frozen=True)
class AnalysisOptions:
    baselines: list[str] = field(default_factory=list)
    threshold: float = 5.0
    relative_to: str | None = None
    compare: list[str] = field(default_factory=list)
    include_flagged: bool = False
    noise_floor: QuotedFloor | None = None

    def relative_engine(self, dataset: Dataset) -> str:
        return _engine(dataset, self.relative_to, "--relative-to")

    def compared(self, dataset: Dataset) -> tuple[str, list[str] | None]:
        """The subject of the pairwise tables, and the engines it is set against (None: all)."""
        chosen = [_engine(dataset, name, "--compare") for name in self.compare]
        if not chosen:
            return dataset.engine_names()[0], None
        return chosen[0], chosen[1:] or None


def _engine(dataset: Dataset, chosen: str | None, option: str) -> str:
    names = dataset.engine_names()
    if chosen is None:
        return names[0]
    if chosen not in dataset.engines:
        raise OltplabError(
            f"{option} {chosen}: no such engine in these results ({', '.join(names)})"
        )
    return chosen


class Analysis:
    """Every table, finding and series of a report, each computed on first use and then
    kept: a renderer that asks for what it draws gets the same object as every other, and
    the charts can start while the tables they do not need are still being computed."""

    def __init__(self, dataset: Dataset, options: AnalysisOptions) -> None:
        if not dataset.cells:
            sources = ", ".join(map(str, dataset.sources))
            raise OltplabError(f"{sources}: no measured cells to report on")
        self.dataset = dataset
        self.options = options
        self.machines = machine_rows(dataset)
        self.points = Points(dataset, spread(self.machines))
        self.relative_engine = options.relative_engine(dataset)
        self.subject, self.compared_with = options.compared(dataset)

    @cached_property
    def grid_metrics(self) -> tuple[str, ...]:
        """The whole-run figures tabled per thread count: latency at each percentile the
        runs used, never two percentiles in one table."""
        latencies = (latency_metric(p) for p in self.dataset.percentiles)
        return ("tps", "qps", *latencies, "lat_avg_ms", "lat_max_ms")

    @cached_property
    def values(self) -> dict[str, dict[Point, Value]]:
        return {metric: self.points.values(metric) for metric in self.grid_metrics}

    @cached_property
    def grids(self) -> dict[str, list[Grid]]:
        return {metric: grids(self.points, metric) for metric in self.grid_metrics}

    @cached_property
    def progression(self) -> list[ProgressionRow]:
        return progression(self.points, self.options.baselines)

    @cached_property
    def differences(self) -> list[ProgressionRow]:
        return differences(self.progression, self.options.threshold)

    @cached_property
    def findings(self) -> list[Finding]:
        return findings(self.points, include_flagged=self.options.include_flagged)

    @cached_property
    def relative(self) -> RelativeTable:
        return relative(self.points, self.relative_engine)

    @cached_property
    def stability(self) -> list[Stability]:
        return stability(self.points)

    @cached_property
    def repetitions(self) -> list[Repeated]:
        return repetitions(self.points)

    @cached_property
    def pairwise(self) -> list[Pairwise]:
        return pairwise(self.points, self.subject, self.compared_with)

    @cached_property
    def flagged(self) -> list[CellRecord]:
        return flagged(self.dataset)

    @cached_property
    def left_out(self) -> list[CellRecord]:
        """Measured cells the key findings leave out: their numbers are in doubt."""
        if self.options.include_flagged:
            return []
        return [c for c in self.dataset.cells if c.measured and c.suspect_flags]

    @cached_property
    def network(self) -> list[NetworkLatencyRow]:
        return network_latency(self.points)

    @cached_property
    def operations(self) -> list[OperationRow]:
        return operation_table(self.points)

    @cached_property
    def timelines(self) -> dict[str, Timeline]:
        return {
            cell.key: found
            for cell in self.dataset.cells
            if (found := timeline(self.points, cell)) is not None
        }

    @cached_property
    def latency(self) -> dict[Point, LatencyPoint]:
        """Each point's latency percentiles, its runs' histograms merged."""
        return latency_points(self.dataset)

    @cached_property
    def curves(self) -> list[Curve]:
        """Latency against offered load, per engine and thread count."""
        return curves(self.dataset, self.latency)

    @cached_property
    def capacities(self) -> list[Found]:
        """What `oltplab capacity` found in these results, if it ran here."""
        return [found for source in self.dataset.sources for found in read_capacities(source)]

    @cached_property
    def omissions(self) -> list[Omission]:
        """Closed loop beside open loop, where the same engine ran both."""
        return omissions(self.dataset, self.latency)

    @cached_property
    def releases(self) -> list[ReleaseSeries]:
        """Each family of two or more releases along each scenario, tier and thread count."""
        return release_series(self.points)

    @cached_property
    def changes(self) -> list[Change]:
        """Change points along each family's releases."""
        return version_changes(self.releases)

    @cached_property
    def notable(self) -> list[tuple[str, CellRecord]]:
        return notable_cells(self.dataset)

    # --- per-transaction costs and precision ----------------------------------------------

    @cached_property
    def cost_points(self) -> dict[str, Points]:
        """Points compared on each per-transaction measure these results have a series for."""
        found = {}
        for measure in MEASURES.values():
            if measure.per_transaction:
                points = Points(self.dataset, spread(self.machines), measure)
                if points.samples():
                    found[measure.name] = points
        return found

    @cached_property
    def costs(self) -> dict[str, list[ProgressionRow]]:
        """The version progression on each per-transaction measure."""
        return {
            name: progression(points, self.options.baselines)
            for name, points in self.cost_points.items()
        }

    @cached_property
    def cost_changes(self) -> dict[str, list[Change]]:
        return {
            name: version_changes(release_series(points))
            for name, points in self.cost_points.items()
        }

    @cached_property
    def target(self) -> Target | None:
        """The precision the run measured to (protocol.target_ci_pct), if it set one."""
        return self.dataset.target

    def points_of(self, measure: Measure) -> Points | None:
        """The points on this measure (None: a per-transaction one the run lacks)."""
        if measure.series is not None:
            return Points(self.dataset, spread(self.machines), measure)
        if measure.per_transaction:
            return self.cost_points.get(measure.name)
        return self.points

    @cached_property
    def answers(self) -> list[Answer]:
        """Each comparison's verdict against the run's precision target."""
        target = self.target
        if target is None:
            return []
        points = self.points_of(target.measure)
        return answers(points, target) if points is not None else []

    @cached_property
    def canary(self) -> Canary | None:
        """The run's A/A canary, judged on its precision target, else on TPS against the
        report's margin."""
        target = self.target
        points = self.points_of(target.measure if target else TPS)
        return canary_of(points, self.options.threshold) if points is not None else None


def analyse(dataset: Dataset, options: AnalysisOptions) -> Analysis:
    return Analysis(dataset, options)
