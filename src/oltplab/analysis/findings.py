"""The key findings, computed from the points: leader, saturation and collapse, buffer pool
lever, read-only / read-write ratio, network overhead, engines close to each other.

Peaks are found on the whole-run figures, the way the reference report reads its tables;
a ratio that is given an interval (the buffer pool lever) is the steady one, from the same
seconds as its interval.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from statistics import mean

from oltplab.analysis.estimate import SIGNIFICANT, Comparison, too_few
from oltplab.analysis.points import Point, Points, Value, cross_family, diff_pct
from oltplab.base.stats import MIN_REPETITIONS
from oltplab.base.wording import counted


@dataclass(frozen=True)
class Finding:
    kind: str
    scenario: str
    tier: str
    engine: str
    value: float
    detail: str
    # How far, in percent, its figures are from the line that decides it (the top two
    # engines' gap for a leader, the peak's lead over the next thread count for a
    # saturation point, the drop for a collapse); None where no line is crossed.
    margin_pct: float | None = None


Peaks = dict[tuple[str, str, str], tuple[int, float]]


def _peaks(found: dict[Point, Value]) -> Peaks:
    """(scenario, tier, engine) -> (thread count of the peak, peak whole-run TPS)."""
    peaks: Peaks = {}
    for (scenario, tier, engine, threads), value in found.items():
        key = (scenario, tier, engine)
        if key not in peaks or value.whole_run > peaks[key][1]:
            peaks[key] = (threads, value.whole_run)
    return peaks


def ratio_interval(versus: Comparison | None, number: str) -> str:
    """A comparison as a ratio with its interval (" 2.9x [2.8x, 3.0x]"); empty without one."""
    if versus is None:
        return ""
    ratio = versus.ratio()
    if ratio.low is None or ratio.high is None:
        return f" {number.format(ratio.point)} ({versus.verdict})"
    return (
        f" {number.format(ratio.point)} [{number.format(ratio.low)}, {number.format(ratio.high)}]"
    )


def findings(
    points: Points, close_pct: float = 3.0, include_flagged: bool = False
) -> list[Finding]:
    """The key findings; cells with validity flags are left out unless include_flagged."""
    dataset = points.dataset
    found = points.values(include_flagged=include_flagged)
    peaks = _peaks(found)
    out: list[Finding] = []
    for scenario in dataset.scenarios:
        for tier in dataset.tiers(scenario):
            out += _leader_and_saturation(points, found, peaks, scenario, tier)
    out += _buffer_pool_lever(points, peaks, include_flagged)
    out += _ro_rw_ratio(points, peaks)
    out += _network_overhead(points, found, include_flagged)
    out += _close_engines(points, found, close_pct)
    return out


def _fewest_repetitions(points: Points, here: list[Point]) -> int | None:
    """The fewest repetitions among these points, when that is too few for an interval."""
    samples = points.samples()
    counts = [samples[p].reps for p in here if p in samples]
    fewest = min(counts, default=0)
    return fewest if 2 <= fewest < MIN_REPETITIONS else None


def _leader_and_saturation(
    points: Points, found: dict[Point, Value], peaks: Peaks, scenario: str, tier: str
) -> list[Finding]:
    dataset = points.dataset
    if dataset.scenario_kinds[scenario].rate:
        return []  # at a fixed offered rate every engine that keeps up gives the same TPS
    here = sorted(
        ((e, p) for (s, t, e), p in peaks.items() if (s, t) == (scenario, tier)),
        key=lambda item: -item[1][1],
    )
    if not here:
        return []
    measured = [point for point in found if point[:2] == (scenario, tier)]
    fewest = _fewest_repetitions(points, measured)
    if fewest is not None:
        return [Finding("too-few", scenario, tier, "all", fewest, too_few(fewest))]
    out = []
    leader, (threads, tps) = here[0]
    if len(here) > 1:
        second, (second_threads, second_tps) = here[1]
        versus = points.comparison(
            (scenario, tier, leader, threads), (scenario, tier, second, second_threads)
        )
        gap = diff_pct(tps, second_tps)
        detail = (
            f"peak {tps:,.0f} TPS at {counted(threads, 'thread')}, {gap:+.1f}% "
            f"ahead of {second} ({second_tps:,.0f} TPS)"
        )
        if kinds := cross_family(dataset, [leader, second]):
            detail += f" (cross-family: {kinds})"
        if versus is not None and versus.verdict == SIGNIFICANT:
            out.append(Finding("leader", scenario, tier, leader, tps, detail, abs(gap)))
        elif versus is None:
            # Too few steady seconds to compare (a very short run): nothing tells them apart.
            out.append(Finding("no-leader", scenario, tier, f"{leader} ~ {second}", tps,
                               f"{detail}; no steady per-second series to compare",
                               abs(gap)))  # fmt: skip
        else:
            # The top two are not told apart: naming one would say more than the data does.
            steady = f"steady {versus.with_interval('95%')}"
            out.append(Finding("no-leader", scenario, tier, f"{leader} ~ {second}", tps,
                               f"{detail}; {steady}{versus.cross_machine}", abs(gap)))  # fmt: skip
    top = max(dataset.threads(scenario, tier))
    if len(dataset.threads(scenario, tier)) < 2:
        return out  # one thread count: no curve to find a saturation point on
    for engine, (peak_threads, peak) in sorted(here, key=lambda i: dataset.engine_order(i[0])):
        runner_up = max(
            (
                figure.whole_run
                for point, figure in found.items()
                if point[:3] == (scenario, tier, engine) and point[3] != peak_threads
            ),
            default=0.0,
        )
        out.append(
            Finding(
                "saturation",
                scenario,
                tier,
                engine,
                peak_threads,
                f"peak {peak:,.0f} TPS at {counted(peak_threads, 'thread')}",
                diff_pct(peak, runner_up) if runner_up else None,
            )
        )
        last = found.get((scenario, tier, engine, top))
        if last is not None and peak_threads != top and peak:
            drop = diff_pct(last.whole_run, peak)
            where = [points.machines((scenario, tier, engine, t)) for t in (peak_threads, top)]
            apart = f" (cross-machine: {where[0]} vs {where[1]})" * (where[0] != where[1])
            detail = (
                f"{peak:,.0f} TPS at {counted(peak_threads, 'thread')} -> {last.whole_run:,.0f} "
                f"at {counted(top, 'thread')} ({drop:+.1f}%){apart}"
            )
            versus = points.comparison(
                (scenario, tier, engine, top), (scenario, tier, engine, peak_threads)
            )
            out.append(
                Finding(
                    "collapse",
                    scenario,
                    tier,
                    engine,
                    drop,
                    detail + _told_apart(versus),
                    abs(drop),
                )
            )
    return out


def _told_apart(versus: Comparison | None) -> str:
    """Whether the steady seconds back a drop the whole-run figures show: from one
    repetition a few percent can be the host's noise, and the finding says so."""
    if versus is None:
        return "; no steady per-second series to compare"
    steady = f"steady {versus.with_interval('95%')}"
    return f"; {steady}" if versus.verdict == SIGNIFICANT else f"; not told apart ({steady})"


def _buffer_pool_lever(points: Points, peaks: Peaks, include_flagged: bool) -> list[Finding]:
    dataset = points.dataset
    out = []
    for scenario in dataset.scenarios:
        tiers = dataset.tiers(scenario)
        if len(tiers) < 2:
            continue
        small, large = tiers[0], tiers[-1]
        for engine in dataset.engine_names():
            low, high = peaks.get((scenario, small, engine)), peaks.get((scenario, large, engine))
            if not (low and high and low[1]):
                continue
            versus = points.comparison(
                (scenario, large, engine, high[0]),
                (scenario, small, engine, low[0]),
                include_flagged,
            )
            steady = f"; steady{ratio_interval(versus, '{:.2f}x')}" if versus else ""
            steady += versus.cross_machine if versus else ""
            out.append(
                Finding(
                    "buffer-pool-lever",
                    scenario,
                    f"{large}/{small}",
                    engine,
                    versus.ratio().point if versus else high[1] / low[1],
                    f"peak {high[1]:,.0f} TPS at {large} vs {low[1]:,.0f} at {small}, "
                    f"{high[1] / low[1]:.2f}x whole run{steady}",
                )
            )
    return out


def _ro_rw_ratio(points: Points, peaks: Peaks) -> list[Finding]:
    dataset = points.dataset
    out = []
    for place in ("local", "network"):
        for tier in dataset.tiers():
            for engine in dataset.engine_names():
                ro = peaks.get((f"ro-{place}", tier, engine))
                rw = peaks.get((f"rw-{place}", tier, engine))
                if ro and rw and rw[1]:
                    ratio = ro[1] / rw[1]
                    where = (
                        points.machines((f"ro-{place}", tier, engine, ro[0])),
                        points.machines((f"rw-{place}", tier, engine, rw[0])),
                    )
                    apart = f" (cross-machine: {where[0]} vs {where[1]})" * (where[0] != where[1])
                    out.append(
                        Finding(
                            "ro-rw-ratio",
                            f"ro/rw-{place}",
                            tier,
                            engine,
                            ratio,
                            f"peak read-only {ro[1]:,.0f} TPS / read-write "
                            f"{rw[1]:,.0f} TPS = {ratio:.1f}x{apart}",
                        )
                    )
    return out


def _network_overhead(
    points: Points, found: dict[Point, Value], include_flagged: bool
) -> list[Finding]:
    dataset = points.dataset
    kinds = dataset.scenario_kinds
    out = []
    for scenario in (kinds[name] for name in dataset.scenarios if kinds[name].network):
        beside = scenario.local.name
        for tier in dataset.tiers():
            for engine in dataset.engine_names():
                diffs, verdicts, apart = [], [], ""
                for threads in dataset.threads(beside, tier):
                    here = (beside, tier, engine, threads)
                    there = (scenario.name, tier, engine, threads)
                    local, network = found.get(here), found.get(there)
                    if not (local and network and local.whole_run):
                        continue
                    versus = points.comparison(there, here, include_flagged)
                    diffs.append(
                        versus.diff_pct if versus else diff_pct(network.whole_run, local.whole_run)
                    )
                    verdicts.append(versus is not None and versus.verdict == SIGNIFICANT)
                    apart = apart or (versus.cross_machine if versus else "")
                if diffs:
                    average = mean(diffs)
                    out.append(
                        Finding(
                            "network-overhead",
                            f"{scenario.name} vs {beside}",
                            tier,
                            engine,
                            average,
                            f"mean {average:+.1f}% over {len(diffs)} thread counts "
                            f"(from {min(diffs):+.1f}% to {max(diffs):+.1f}%; significant at "
                            f"{sum(verdicts)} of {len(verdicts)}){apart}",
                        )
                    )
    return out


def _close_engines(points: Points, found: dict[Point, Value], close_pct: float) -> list[Finding]:
    """Engine pairs whose every common point is within close_pct: on the steady intervals
    (each inside +-close_pct), or on whole-run figures where no interval can be had."""
    dataset = points.dataset
    by_engine: dict[str, dict[tuple[str, str, int], float]] = defaultdict(dict)
    for (scenario, tier, engine, threads), value in found.items():
        by_engine[engine][(scenario, tier, threads)] = value.whole_run
    out = []
    for a, b in combinations(dataset.engine_names(), 2):
        common = by_engine[a].keys() & by_engine[b].keys()
        if not common:
            continue
        widest = max(
            abs(diff_pct(by_engine[a][k], by_engine[b][k])) for k in common if by_engine[b][k]
        )
        if widest >= close_pct:
            continue
        comparisons = [points.comparison((s, t, a, n), (s, t, b, n)) for s, t, n in common]
        shown = [c for c in comparisons if c is not None]
        if not shown or all(_within(c, close_pct) for c in shown):
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


def _within(comparison: Comparison, band_pct: float) -> bool:
    low, high = comparison.low_pct, comparison.high_pct
    return low is not None and high is not None and -band_pct < low and high < band_pct
