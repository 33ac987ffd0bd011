"""The tables of the reference report, computed from the points of a dataset.

All pure: Points in, rows out. Every figure shown with an interval is a steady estimate
from the same seconds as its interval; the whole-run figures sysbench printed travel
beside them under their own names.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean

import numpy as np

from oltplab.analysis.dataset import CellRecord, Dataset
from oltplab.analysis.estimate import SIGNIFICANT, Comparison, Estimate, mean_estimate
from oltplab.analysis.points import Point, Points, Value, diff_pct
from oltplab.base.errors import OltplabError
from oltplab.base.metrics import latency_metric
from oltplab.base.stats import jitter
from oltplab.spec.catalog import UNKNOWN_FAMILY
from oltplab.store.status import Status

# --- version progression ------------------------------------------------------------------


@dataclass(frozen=True)
class ProgressionRow:
    scenario: str
    tier: str
    family: str
    baseline_engine: str
    baseline_version: str
    engine: str
    version: str
    threads: int
    value: Value
    baseline: Value
    change: Comparison | None  # over the steady seconds; None without per-second data
    flags: tuple[str, ...]

    @property
    def whole_run_diff_pct(self) -> float:
        return diff_pct(self.value.whole_run, self.baseline.whole_run)

    @property
    def shown_diff_pct(self) -> float:
        """The difference the row is judged by: the steady one, else the whole-run one."""
        return self.change.diff_pct if self.change else self.whole_run_diff_pct


def baselines(dataset: Dataset, chosen: list[str] | None = None) -> dict[str, str]:
    """The baseline engine per family: the one chosen, else the family's oldest version.
    Engines of no known family (imported as `unknown`) are not a version series."""
    result: dict[str, str] = {}
    for name in dataset.engine_names():
        if dataset.engines[name].family != UNKNOWN_FAMILY:
            result.setdefault(dataset.engines[name].family, name)
    for name in chosen or []:
        if name not in dataset.engines:
            known = ", ".join(dataset.engine_names())
            raise OltplabError(f"--baseline {name}: no such engine in these results ({known})")
        result[dataset.engines[name].family] = name
    return result


def progression(points: Points, chosen: list[str] | None = None) -> list[ProgressionRow]:
    dataset, found = points.dataset, points.values()
    rows = []
    for family, base in baselines(dataset, chosen).items():
        members = [
            e for e in dataset.engine_names() if dataset.engines[e].family == family and e != base
        ]
        for scenario in dataset.scenarios:
            for tier in dataset.tiers(scenario):
                for engine in members:
                    for threads in dataset.threads(scenario, tier):
                        here = (scenario, tier, engine, threads)
                        there = (scenario, tier, base, threads)
                        b, v = found.get(there), found.get(here)
                        if b is None or v is None or b.whole_run == 0:
                            continue
                        rows.append(
                            ProgressionRow(
                                scenario,
                                tier,
                                family,
                                base,
                                dataset.engines[base].version,
                                engine,
                                dataset.engines[engine].version,
                                threads,
                                v,
                                b,
                                points.comparison(here, there),
                                tuple(sorted(set(v.flags + b.flags))),
                            )
                        )
    return rows


def differences(rows: list[ProgressionRow], threshold: float) -> list[ProgressionRow]:
    """Significant rows beyond the threshold as shown (one decimal): -5.0% is not listed.

    Without per-second data a row has no interval and is kept on its whole-run size alone.
    """
    return [
        r
        for r in rows
        if abs(round(r.shown_diff_pct, 1)) > threshold
        and (r.change is None or r.change.verdict == SIGNIFICANT)
    ]


# --- relative to a baseline engine -----------------------------------------------------------


@dataclass(frozen=True)
class Ratio:
    """An engine's TPS over the baseline engine's: the steady ratio with its interval, and
    the whole-run ratio (the only one without per-second data)."""

    whole_run: float
    steady: Estimate | None


RelativeTable = dict[tuple[str, str], dict[str, dict[int, Ratio]]]


def relative(points: Points, baseline: str) -> RelativeTable:
    """Each engine's TPS over the baseline engine's, per thread count (baseline = 1.0)."""
    dataset, found = points.dataset, points.values()
    out: RelativeTable = {}
    for scenario in dataset.scenarios:
        for tier in dataset.tiers(scenario):
            table: dict[str, dict[int, Ratio]] = {}
            for engine in dataset.engine_names():
                for threads in dataset.threads(scenario, tier):
                    there = (scenario, tier, baseline, threads)
                    here = (scenario, tier, engine, threads)
                    b, v = found.get(there), found.get(here)
                    if not (b and v and b.whole_run):
                        continue
                    versus = None if engine == baseline else points.comparison(here, there)
                    steady = (
                        versus.ratio()
                        if versus
                        else (Estimate(1.0, 1.0, 1.0, v.runs, "itself") if v.steady else None)
                    )
                    table.setdefault(engine, {})[threads] = Ratio(v.whole_run / b.whole_run, steady)
            if table:
                out[(scenario, tier)] = table
    return out


# --- stability ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stability:
    """One cell's per-second TPS after the warm-up cut."""

    cell: CellRecord
    steady_from: int  # the first second counted, 1-based
    mean: Estimate
    median: float
    std: float
    jitter: float | None
    minimum: float
    p5: float
    p95: float


def stability(points: Points) -> list[Stability]:
    """Per measured cell: where the steady part starts (MSER-5) and what it looks like."""
    out = []
    for cell in points.dataset.cells:
        cut = points.cuts.get(cell.key)
        if not cell.measured or cut is None:
            continue
        part = cut.sample.series[cell.repetition]
        p5, p95 = np.percentile(part, [5, 95])
        out.append(
            Stability(
                cell,
                cut.steady_from,
                mean_estimate(cut.sample),
                float(np.median(part)),
                float(part.std(ddof=1)),
                jitter(part),
                float(part.min()),
                float(p5),
                float(p95),
            )
        )
    return out


@dataclass(frozen=True)
class Repeated:
    """A point measured more than once: the mean of its repetition means, with its interval."""

    point: Point
    reps: int
    mean: Estimate


def repetitions(points: Points) -> list[Repeated]:
    return [
        Repeated(point, sample.reps, mean_estimate(sample))
        for point, sample in sorted(points.samples().items())
        if sample.reps >= 2
    ]


# --- pairwise comparison -----------------------------------------------------------------------


@dataclass(frozen=True)
class Pairwise:
    """QPS and latency (at each percentile the runs used) as sysbench printed them, and the
    subject's throughput improvement over each other engine: steady, with its interval,
    and whole-run QPS."""

    scenario: str
    tier: str
    subject: str
    others: list[str]
    threads: list[int]
    qps: dict[str, dict[int, float]]
    latency: dict[int, dict[str, dict[int, float]]]  # percentile -> engine -> threads
    improvement: dict[str, dict[int, Comparison]]
    whole_run_improvement: dict[str, dict[int, float]]

    def average_improvement(self, other: str) -> float | None:
        values = [c.diff_pct for c in self.improvement.get(other, {}).values()]
        return mean(values) if values else None


def pairwise(points: Points, subject: str, chosen: list[str] | None = None) -> list[Pairwise]:
    dataset = points.dataset
    qps = points.values("qps")
    latency = {p: points.values(latency_metric(p)) for p in dataset.percentiles}
    out = []
    for scenario in dataset.scenarios:
        for tier in dataset.tiers(scenario):
            threads = dataset.threads(scenario, tier)
            engines = [
                e
                for e in dataset.engines_in(scenario, tier)
                if any((scenario, tier, e, t) in qps for t in threads)
                and (chosen is None or e == subject or e in chosen)
            ]
            if subject not in engines or len(engines) < 2:
                continue
            others = [e for e in engines if e != subject]
            table_q = _by_threads(qps, scenario, tier, threads, engines)
            improvement: dict[str, dict[int, Comparison]] = {}
            whole_run: dict[str, dict[int, float]] = {}
            for other in others:
                for t in threads:
                    if t not in table_q[subject] or not table_q[other].get(t):
                        continue
                    whole_run.setdefault(other, {})[t] = diff_pct(
                        table_q[subject][t], table_q[other][t]
                    )
                    versus = points.comparison(
                        (scenario, tier, subject, t), (scenario, tier, other, t)
                    )
                    if versus is not None:
                        improvement.setdefault(other, {})[t] = versus
            out.append(
                Pairwise(
                    scenario,
                    tier,
                    subject,
                    others,
                    threads,
                    table_q,
                    {
                        p: _by_threads(found, scenario, tier, threads, engines)
                        for p, found in latency.items()
                    },
                    improvement,
                    whole_run,
                )
            )
    return out


def _by_threads(
    found: dict[Point, Value], scenario: str, tier: str, threads: list[int], engines: list[str]
) -> dict[str, dict[int, float]]:
    return {
        e: {
            t: found[(scenario, tier, e, t)].whole_run
            for t in threads
            if (scenario, tier, e, t) in found
        }
        for e in engines
    }


def flagged(dataset: Dataset) -> list[CellRecord]:
    return [c for c in dataset.cells if c.flags or c.status == Status.FAILED]


# --- network latency -------------------------------------------------------------------------


@dataclass(frozen=True)
class NetworkLatencyRow:
    mode: str  # the workload's short name
    tier: str
    engine: str
    threads: int
    local_ms: float
    network_ms: float
    round_trips: float  # statements per transaction, each one round trip
    machines: tuple[str, str] | None = None  # local's and network's, when they differ

    @property
    def added_ms(self) -> float:
        return self.network_ms - self.local_ms

    @property
    def per_round_trip_ms(self) -> float | None:
        return self.added_ms / self.round_trips if self.round_trips else None


def network_latency(points: Points) -> list[NetworkLatencyRow]:
    """Average latency over the network against local, and what it adds per round trip."""
    latency, qps, tps = (points.values(m) for m in ("lat_avg_ms", "qps", "tps"))
    kinds = points.dataset.scenario_kinds
    rows = []
    for (scenario, tier, engine, threads), network in sorted(latency.items()):
        if not kinds[scenario].network:
            continue
        local = latency.get((kinds[scenario].local.name, tier, engine, threads))
        point = (scenario, tier, engine, threads)
        if local is None or point not in qps or not tps[point].whole_run:
            continue
        round_trips = qps[point].whole_run / tps[point].whole_run
        where = (points.machines((kinds[scenario].local.name, tier, engine, threads)),
                 points.machines(point))  # fmt: skip
        rows.append(
            NetworkLatencyRow(
                kinds[scenario].label,
                tier,
                engine,
                threads,
                local.whole_run,
                network.whole_run,
                round_trips,
                where if where[0] != where[1] else None,
            )
        )
    return rows
