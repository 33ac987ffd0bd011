"""The tables and findings of the reference report, computed from the dataset.

All pure: a Dataset in, plain rows out. A point is the mean of a cell's measured
repetitions; a point with any flagged repetition carries those flags along.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from statistics import mean

import numpy as np

from oltplab.analysis.dataset import CellRecord, Dataset
from oltplab.compare import (
    INCONCLUSIVE,
    SIGNIFICANT,
    Comparison,
    PointSample,
    compare,
    mean_interval,
)
from oltplab.errors import OltplabError
from oltplab.stats import jitter, steady

Point = tuple[str, str, str, int]  # scenario, tier, engine, threads


@dataclass(frozen=True)
class Value:
    value: float
    runs: int
    flags: tuple[str, ...]


def _usable(cell: CellRecord, include_flagged: bool) -> bool:
    return cell.measured and (include_flagged or not cell.suspect_flags)


def points(
    dataset: Dataset, metric: str = "tps", include_flagged: bool = True
) -> dict[Point, Value]:
    grouped: dict[Point, list[CellRecord]] = defaultdict(list)
    for cell in dataset.cells:
        if include_flagged or not cell.suspect_flags:
            grouped[(cell.scenario, cell.tier, cell.engine, cell.threads)].append(cell)
    result = {}
    for point, cells in grouped.items():
        values = [c.metric(metric) for c in cells if c.measured and c.metric(metric) is not None]
        if values:
            flags = tuple(sorted({f for c in cells for f in c.suspect_flags}))
            result[point] = Value(mean(values), len(values), flags)  # type: ignore[arg-type]
    return result


@dataclass(frozen=True)
class Grid:
    """Engines as rows, thread counts as columns, like the report's Table 6.1.1."""

    scenario: str
    tier: str
    metric: str
    threads: list[int]
    rows: list[tuple[str, list[Value | None]]]


def grids(dataset: Dataset, metric: str) -> list[Grid]:
    found = points(dataset, metric)
    out = []
    for scenario in dataset.scenarios:
        for tier in dataset.tiers(scenario):
            threads = dataset.threads(scenario, tier)
            engines = dataset.engines_in(scenario, tier)
            rows = [(e, [found.get((scenario, tier, e, t)) for t in threads]) for e in engines]
            out.append(Grid(scenario, tier, metric, threads, rows))
    return out


def diff_pct(value: float, baseline: float) -> float:
    return (value / baseline - 1.0) * 100.0


def cell_sample(dataset: Dataset, cell: CellRecord) -> tuple[int, PointSample] | None:
    """A cell's warm-up cut and steady series, computed once per dataset."""
    key = ("cell", cell.key)
    if key not in dataset.memo:
        series = dataset.series.get(cell.key)
        found = None
        if series and len(series) >= 2:
            cut, part = steady(series, dataset.fixed_cut)
            found = (cut, PointSample({cell.repetition: part}))
        dataset.memo[key] = found
    return dataset.memo[key]  # type: ignore[no-any-return]


def samples(dataset: Dataset, include_flagged: bool = True) -> dict[Point, PointSample]:
    """Each point's steady per-second TPS series (MSER-5 cut), by repetition."""
    key = ("samples", include_flagged)
    if key in dataset.memo:
        return dataset.memo[key]  # type: ignore[no-any-return]
    found: dict[Point, list[PointSample]] = defaultdict(list)
    for cell in dataset.cells:
        cut_and_sample = cell_sample(dataset, cell)
        if cut_and_sample and _usable(cell, include_flagged):
            found[(cell.scenario, cell.tier, cell.engine, cell.threads)].append(cut_and_sample[1])
    # A point with one run is that run's sample, so its bootstrap draws are shared.
    result = {
        point: parts[0]
        if len(parts) == 1
        else PointSample({r: s for part in parts for r, s in part.series.items()})
        for point, parts in found.items()
    }
    dataset.memo[key] = result
    return result


def comparison(
    dataset: Dataset, sample: dict[Point, PointSample], a: Point, b: Point
) -> Comparison | None:
    """a against b with its interval; None when either has no per-second data."""
    if a not in sample or b not in sample:
        return None
    return compare(sample[a], sample[b], paired=dataset.paired, label=f"{a}|{b}")


def dbms(family: str) -> str:
    """MySQL, MariaDB and Percona Server are one kind of server; PostgreSQL another."""
    return "PostgreSQL" if family == "postgresql" else "MySQL-family"


def cross_family(dataset: Dataset, engines: list[str]) -> str | None:
    """ "MySQL-family vs PostgreSQL" when these engines are different kinds of server."""
    kinds = sorted({dbms(dataset.engines[e].family) for e in engines if e in dataset.engines})
    return " vs ".join(kinds) if len(kinds) > 1 else None


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
    tps: float
    baseline_tps: float
    diff_pct: float
    flags: tuple[str, ...]
    comparison: Comparison | None


def baselines(dataset: Dataset, chosen: list[str] | None = None) -> dict[str, str]:
    """The baseline engine per family: the one chosen, else the family's oldest version."""
    result: dict[str, str] = {}
    for name in dataset.engine_names():
        result.setdefault(dataset.engines[name].family, name)
    for name in chosen or []:
        if name not in dataset.engines:
            known = ", ".join(dataset.engine_names())
            raise OltplabError(f"--baseline {name}: no such engine in these results ({known})")
        result[dataset.engines[name].family] = name
    return result


def progression(dataset: Dataset, chosen: list[str] | None = None) -> list[ProgressionRow]:
    found = points(dataset)
    sample = samples(dataset)
    rows = []
    for family, base in baselines(dataset, chosen).items():
        members = [
            e for e in dataset.engine_names() if dataset.engines[e].family == family and e != base
        ]
        for scenario in dataset.scenarios:
            for tier in dataset.tiers(scenario):
                for engine in members:
                    for threads in dataset.threads(scenario, tier):
                        b = found.get((scenario, tier, base, threads))
                        v = found.get((scenario, tier, engine, threads))
                        if b is None or v is None or b.value == 0:
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
                                v.value,
                                b.value,
                                diff_pct(v.value, b.value),
                                tuple(sorted(set(v.flags + b.flags))),
                                comparison(
                                    dataset,
                                    sample,
                                    (scenario, tier, engine, threads),
                                    (scenario, tier, base, threads),
                                ),
                            )
                        )
    return rows


def differences(rows: list[ProgressionRow], threshold: float) -> list[ProgressionRow]:
    """Significant rows beyond the threshold as shown (one decimal): -5.0% is not listed.

    Without per-second data a row has no interval and is kept on its size alone.
    """
    return [
        r
        for r in rows
        if abs(round(r.diff_pct, 1)) > threshold
        and (r.comparison is None or r.comparison.verdict == SIGNIFICANT)
    ]


# --- relative to a baseline engine -----------------------------------------------------------


@dataclass(frozen=True)
class Ratio:
    value: float
    comparison: Comparison | None

    def interval(self) -> str:
        return ratio_interval(self.comparison, "{:.2f}")


RelativeTable = dict[tuple[str, str], dict[str, dict[int, Ratio]]]


def relative(dataset: Dataset, baseline: str) -> RelativeTable:
    """Each engine's TPS over the baseline engine's, per thread count (baseline = 1.0)."""
    found = points(dataset)
    sample = samples(dataset)
    out: RelativeTable = {}
    for scenario in dataset.scenarios:
        for tier in dataset.tiers(scenario):
            table: dict[str, dict[int, Ratio]] = {}
            for engine in dataset.engine_names():
                for threads in dataset.threads(scenario, tier):
                    b = found.get((scenario, tier, baseline, threads))
                    v = found.get((scenario, tier, engine, threads))
                    if b and v and b.value:
                        versus = (
                            None
                            if engine == baseline
                            else comparison(
                                dataset,
                                sample,
                                (scenario, tier, engine, threads),
                                (scenario, tier, baseline, threads),
                            )
                        )
                        table.setdefault(engine, {})[threads] = Ratio(v.value / b.value, versus)
            if table:
                out[(scenario, tier)] = table
    return out


# --- findings -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    kind: str
    scenario: str
    tier: str
    engine: str
    value: float
    detail: str


def _peaks(found: dict[Point, Value]) -> dict[tuple[str, str, str], tuple[int, float]]:
    """(scenario, tier, engine) -> (thread count of the peak, peak TPS)."""
    peaks: dict[tuple[str, str, str], tuple[int, float]] = {}
    for (scenario, tier, engine, threads), value in found.items():
        key = (scenario, tier, engine)
        if key not in peaks or value.value > peaks[key][1]:
            peaks[key] = (threads, value.value)
    return peaks


def _threads(count: int) -> str:
    return f"{count} thread{'s' if count != 1 else ''}"


def findings(
    dataset: Dataset, close_pct: float = 3.0, include_flagged: bool = False
) -> list[Finding]:
    """The key findings; cells with validity flags are left out unless include_flagged."""
    found = points(dataset, include_flagged=include_flagged)
    peaks = _peaks(found)
    sample = samples(dataset, include_flagged)
    out: list[Finding] = []
    for scenario in dataset.scenarios:
        for tier in dataset.tiers(scenario):
            here = sorted(
                ((e, p) for (s, t, e), p in peaks.items() if (s, t) == (scenario, tier)),
                key=lambda item: -item[1][1],
            )
            if not here:
                continue
            leader, (threads, tps) = here[0]
            detail = f"peak {tps:,.0f} TPS at {_threads(threads)}"
            if len(here) > 1:
                detail += (
                    f", {diff_pct(tps, here[1][1][1]):+.1f}% ahead of {here[1][0]} "
                    f"({here[1][1][1]:,.0f} TPS)"
                )
                if kinds := cross_family(dataset, [leader, here[1][0]]):
                    detail += f" (cross-family: {kinds})"
            out.append(Finding("leader", scenario, tier, leader, tps, detail))
            top = max(dataset.threads(scenario, tier))
            for engine, (peak_threads, peak) in sorted(
                here, key=lambda i: dataset.engine_order(i[0])
            ):
                out.append(
                    Finding(
                        "saturation",
                        scenario,
                        tier,
                        engine,
                        peak_threads,
                        f"peak {peak:,.0f} TPS at {_threads(peak_threads)}",
                    )
                )
                last = found.get((scenario, tier, engine, top))
                if last is not None and peak_threads != top and peak:
                    drop = diff_pct(last.value, peak)
                    out.append(
                        Finding(
                            "collapse",
                            scenario,
                            tier,
                            engine,
                            drop,
                            f"{peak:,.0f} TPS at {_threads(peak_threads)} -> {last.value:,.0f} "
                            f"at {_threads(top)} ({drop:+.1f}%)",
                        )
                    )
    out += _buffer_pool_lever(dataset, peaks, sample)
    out += _ro_rw_ratio(dataset, peaks)
    out += _network_overhead(dataset, found, sample)
    out += _close_engines(dataset, found, close_pct)
    return out


def _buffer_pool_lever(
    dataset: Dataset,
    peaks: dict[tuple[str, str, str], tuple[int, float]],
    sample: dict[Point, PointSample],
) -> list[Finding]:
    out = []
    for scenario in dataset.scenarios:
        tiers = dataset.tiers(scenario)
        if len(tiers) < 2:
            continue
        small, large = tiers[0], tiers[-1]
        for engine in dataset.engine_names():
            low, high = peaks.get((scenario, small, engine)), peaks.get((scenario, large, engine))
            if low and high and low[1]:
                ratio = high[1] / low[1]
                versus = comparison(
                    dataset,
                    sample,
                    (scenario, large, engine, high[0]),
                    (scenario, small, engine, low[0]),
                )
                out.append(
                    Finding(
                        "buffer-pool-lever",
                        scenario,
                        f"{large}/{small}",
                        engine,
                        ratio,
                        f"peak {high[1]:,.0f} TPS at {large} vs {low[1]:,.0f} at "
                        f"{small}: {ratio:.1f}x{ratio_interval(versus, '{:.1f}x')}",
                    )
                )
    return out


def ratio_interval(versus: Comparison | None, number: str) -> str:
    """A comparison's interval as ratios (" [0.70, 0.82]"); empty when there is none."""
    if versus is None or versus.verdict == INCONCLUSIVE:
        return ""
    low, high = 1 + versus.low_pct / 100, 1 + versus.high_pct / 100
    return f" [{number.format(low)}, {number.format(high)}]"


def _ro_rw_ratio(
    dataset: Dataset, peaks: dict[tuple[str, str, str], tuple[int, float]]
) -> list[Finding]:
    out = []
    for place in ("local", "network"):
        for tier in dataset.tiers():
            for engine in dataset.engine_names():
                ro, rw = (
                    peaks.get((f"ro-{place}", tier, engine)),
                    peaks.get((f"rw-{place}", tier, engine)),
                )
                if ro and rw and rw[1]:
                    ratio = ro[1] / rw[1]
                    out.append(
                        Finding(
                            "ro-rw-ratio",
                            f"ro/rw-{place}",
                            tier,
                            engine,
                            ratio,
                            f"peak read-only {ro[1]:,.0f} TPS / read-write "
                            f"{rw[1]:,.0f} TPS = {ratio:.1f}x",
                        )
                    )
    return out


def _network_overhead(
    dataset: Dataset, found: dict[Point, Value], sample: dict[Point, PointSample]
) -> list[Finding]:
    out = []
    for mode in ("rw", "ro"):
        for tier in dataset.tiers():
            for engine in dataset.engine_names():
                diffs, verdicts = [], []
                for threads in dataset.threads(f"{mode}-local", tier):
                    here = (f"{mode}-local", tier, engine, threads)
                    there = (f"{mode}-network", tier, engine, threads)
                    local, network = found.get(here), found.get(there)
                    if local and network and local.value:
                        diffs.append(diff_pct(network.value, local.value))
                        versus = comparison(dataset, sample, there, here)
                        verdicts.append(versus is not None and versus.verdict == SIGNIFICANT)
                if diffs:
                    average = mean(diffs)
                    out.append(
                        Finding(
                            "network-overhead",
                            f"{mode}-network vs {mode}-local",
                            tier,
                            engine,
                            average,
                            f"mean {average:+.1f}% over {len(diffs)} thread counts "
                            f"(from {min(diffs):+.1f}% to {max(diffs):+.1f}%; significant at "
                            f"{sum(verdicts)} of {len(verdicts)})",
                        )
                    )
    return out


def _close_engines(dataset: Dataset, found: dict[Point, Value], close_pct: float) -> list[Finding]:
    by_engine: dict[str, dict[tuple[str, str, int], float]] = defaultdict(dict)
    for (scenario, tier, engine, threads), value in found.items():
        by_engine[engine][(scenario, tier, threads)] = value.value
    out = []
    for a, b in combinations(dataset.engine_names(), 2):
        common = by_engine[a].keys() & by_engine[b].keys()
        if not common:
            continue
        widest = max(
            abs(diff_pct(by_engine[a][k], by_engine[b][k])) for k in common if by_engine[b][k]
        )
        if widest < close_pct:
            kinds = cross_family(dataset, [a, b])
            out.append(
                Finding(
                    "close-engines",
                    "all",
                    "all",
                    f"{a} ~ {b}",
                    widest,
                    f"within {widest:.1f}% of each other in all {len(common)} common points"
                    + (f" (cross-family: {kinds})" if kinds else ""),
                )
            )
    return out


# --- stability and pairwise comparison ---------------------------------------------------------


@dataclass(frozen=True)
class Stability:
    """Statistics of one cell's per-second TPS after the warm-up cut."""

    cell: CellRecord
    steady_from_s: int
    mean_tps: float
    median: float
    std: float
    jitter: float | None
    minimum: float
    p5: float
    p95: float
    ci_low: float
    ci_high: float


def stability(dataset: Dataset) -> list[Stability]:
    """Per measured cell: where the steady part starts (MSER-5) and what it looks like."""
    out = []
    for cell in dataset.cells:
        series = dataset.series.get(cell.key, [])
        if not cell.measured or len(series) < 2:
            continue
        cut_and_sample = cell_sample(dataset, cell)
        if cut_and_sample is None:
            continue
        cut, sample = cut_and_sample
        part = sample.series[cell.repetition]
        low, high = mean_interval(sample)
        p5, p95 = np.percentile(part, [5, 95])
        out.append(
            Stability(
                cell,
                cut,
                float(part.mean()),
                float(np.median(part)),
                float(part.std(ddof=1)),
                jitter(part),
                float(part.min()),
                float(p5),
                float(p95),
                low,
                high,
            )
        )
    return out


@dataclass(frozen=True)
class Repeated:
    """A point measured more than once: the mean of its repetition means, with its interval."""

    point: Point
    reps: int
    mean: float
    low: float
    high: float


def repetitions(dataset: Dataset) -> list[Repeated]:
    out = []
    for point, sample in sorted(samples(dataset).items()):
        if sample.reps >= 2:
            low, high = mean_interval(sample)
            out.append(Repeated(point, sample.reps, sample.mean, low, high))
    return out


@dataclass(frozen=True)
class Pairwise:
    scenario: str
    tier: str
    subject: str
    others: list[str]
    threads: list[int]
    qps: dict[str, dict[int, float]]
    p95: dict[str, dict[int, float]]
    improvement: dict[str, dict[int, Comparison]]

    def average_improvement(self, other: str) -> float | None:
        values = [c.diff_pct for c in self.improvement.get(other, {}).values()]
        return mean(values) if values else None


def pairwise(dataset: Dataset, subject: str, chosen: list[str] | None = None) -> list[Pairwise]:
    """QPS and p95 latency per thread count, and the subject's QPS improvement over others."""
    qps, p95 = points(dataset, "qps"), points(dataset, "lat_p95_ms")
    sample = samples(dataset)
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
            table_l = _by_threads(p95, scenario, tier, threads, engines)
            improvement = {
                o: {
                    t: _improvement(
                        dataset,
                        sample,
                        (scenario, tier, subject, t),
                        (scenario, tier, o, t),
                        table_q[subject][t],
                        table_q[o][t],
                    )
                    for t in threads
                    if t in table_q[subject] and t in table_q[o] and table_q[o][t]
                }
                for o in others
            }
            out.append(
                Pairwise(scenario, tier, subject, others, threads, table_q, table_l, improvement)
            )
    return out


def _by_threads(
    found: dict[Point, Value], scenario: str, tier: str, threads: list[int], engines: list[str]
) -> dict[str, dict[int, float]]:
    return {
        e: {
            t: found[(scenario, tier, e, t)].value
            for t in threads
            if (scenario, tier, e, t) in found
        }
        for e in engines
    }


def _improvement(
    dataset: Dataset,
    sample: dict[Point, PointSample],
    a: Point,
    b: Point,
    qps_a: float,
    qps_b: float,
) -> Comparison:
    """QPS improvement; its interval comes from the TPS series (QPS moves with TPS)."""
    versus = comparison(dataset, sample, a, b)
    diff = diff_pct(qps_a, qps_b)
    if versus is None:
        return Comparison(diff, float("nan"), float("nan"), INCONCLUSIVE, 0, "no series")
    return Comparison(
        diff, versus.low_pct, versus.high_pct, versus.verdict, versus.n, versus.method
    )


def flagged(dataset: Dataset) -> list[CellRecord]:
    return [c for c in dataset.cells if c.flags or c.status == "failed"]


# --- network latency -------------------------------------------------------------------------


@dataclass(frozen=True)
class NetworkLatencyRow:
    mode: str
    tier: str
    engine: str
    threads: int
    local_ms: float
    network_ms: float
    round_trips: float  # statements per transaction, each one round trip

    @property
    def added_ms(self) -> float:
        return self.network_ms - self.local_ms

    @property
    def per_round_trip_ms(self) -> float:
        return self.added_ms / self.round_trips if self.round_trips else float("nan")


def network_latency(dataset: Dataset) -> list[NetworkLatencyRow]:
    """Average latency over the network against local, and what it adds per round trip."""
    latency, qps, tps = (points(dataset, m) for m in ("lat_avg_ms", "qps", "tps"))
    rows = []
    for (scenario, tier, engine, threads), network in sorted(latency.items()):
        if not scenario.endswith("-network"):
            continue
        mode = scenario.removesuffix("-network")
        local = latency.get((f"{mode}-local", tier, engine, threads))
        point = (scenario, tier, engine, threads)
        if local is None or point not in qps or not tps[point].value:
            continue
        round_trips = qps[point].value / tps[point].value
        rows.append(
            NetworkLatencyRow(mode, tier, engine, threads, local.value, network.value, round_trips)
        )
    return rows
