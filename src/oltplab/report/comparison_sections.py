"""The reference report's sections: results, progression,
differences, findings, relative figures, stability, pairwise comparisons and where the
series changed, read from the analysis.

Figures with an interval are steady estimates, printed with the interval made from the
same seconds; the figures sysbench printed for whole runs are labelled as such."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from oltplab.analysis.changes import Change, disagreement_sentences, no_change_sentences
from oltplab.analysis.estimate import Comparison
from oltplab.analysis.model import Analysis
from oltplab.analysis.points import Grid, Value, cross_family
from oltplab.analysis.tables import ProgressionRow, Ratio
from oltplab.base.metrics import percentile_of
from oltplab.report.format import (
    CROSS_FAMILY,
    estimate,
    number,
    percent,
    scenario_title,
    table,
    with_interval,
)
from oltplab.store.directory import chart_stem
from oltplab.store.status import Status
from oltplab.sysbench.validity import ERROR_RATE_LIMIT

METRIC_TITLES = {
    "tps": "TPS",
    "qps": "QPS",
    "lat_avg_ms": "average latency (ms)",
    "lat_max_ms": "max latency (ms)",
}


def metric_title(metric: str) -> str:
    """A whole-run figure's heading; latency says its percentile."""
    if (percentile := percentile_of(metric)) is not None:
        return f"p{percentile} latency (ms)"
    return METRIC_TITLES[metric]


FINDING_TITLES = {
    "leader": "Leader",
    "no-leader": "No clear leader",
    "too-few": "Too few repetitions",
    "saturation": "Saturation point",
    "collapse": "Collapse after the peak",
    "buffer-pool-lever": "Buffer pool lever",
    "ro-rw-ratio": "Read-only / read-write ratio",
    "network-overhead": "Network overhead",
    "close-engines": "Engines within 3% everywhere",
}


def mark(value: Value | None, formatted: str) -> str:
    return f"{formatted} †" if value is not None and value.flags else formatted


def _chart(charts: list[Path], stem: str) -> list[str]:
    return [f"![{stem}]({p.as_posix()})\n" for p in charts if p.stem == stem]


def _grid(grid: Grid, failed: set[tuple[str, str, str, int]]) -> list[str]:
    def shown(engine: str, threads: int, value: Value | None) -> str:
        if value is not None:
            return mark(value, number(value.whole_run))
        return "failed" if (grid.scenario, grid.tier, engine, threads) in failed else "-"

    rows = [
        [engine, *(shown(engine, t, v) for t, v in zip(grid.threads, values, strict=True))]
        for engine, values in grid.rows
    ]
    return table(["Engine", *(f"{t}t" for t in grid.threads)], rows)


def results(analysis: Analysis, charts: list[Path]) -> list[str]:
    dataset = analysis.dataset
    out = [
        "## 3. Results by scenario and tier",
        "",
        "What sysbench printed for each whole run (mean over repetitions), as the reference "
        "report tables it; the steady estimates with their intervals are in the sections that "
        "follow. † marks a value with a validity flag (see Flagged and failed cells).",
        "",
    ]
    if kinds := cross_family(dataset, dataset.engine_names()):
        out += [CROSS_FAMILY.format(kinds=kinds), ""]
    by_metric = {m: {(g.scenario, g.tier): g for g in found} for m, found in analysis.grids.items()}
    failed = {
        (c.scenario, c.tier, c.engine, c.threads)
        for c in dataset.cells
        if c.status == Status.FAILED
    }
    for scenario in dataset.scenarios:
        out += [f"### {scenario_title(scenario, dataset.workloads)}", ""]
        for tier in dataset.tiers(scenario):
            for metric in analysis.grid_metrics:
                grid = by_metric[metric].get((scenario, tier))
                # A percentile no run of this tier used has no table here.
                unused = percentile_of(metric) is not None and not any(
                    v for _, values in (grid.rows if grid else []) for v in values
                )
                if grid and grid.rows and not unused:
                    title = metric_title(metric)
                    out += [f"**{title} by thread count, tier {tier} ({scenario})**", ""]
                    out += _grid(grid, failed)
    return out


def _steady_tps(value: Value) -> str:
    return number(value.steady.point) if value.steady else f"{number(value.whole_run)} (whole run)"


def _verdict(change: Comparison | None) -> str:
    return change.verdict if change else "no per-second data"


def progression(analysis: Analysis, charts: list[Path]) -> list[str]:
    out = [
        "## 4. Version progression",
        "",
        "TPS over the steady seconds (after each run's warm-up cut) and the difference with "
        "its 95% interval, both from those seconds; the last row is the difference of the "
        "whole-run figures of Results by scenario and tier.",
        "",
    ]
    if not analysis.progression:
        return [*out, "No family has more than one version in these results.", ""]
    grouped: dict[tuple[str, str, str], list[ProgressionRow]] = defaultdict(list)
    for row in analysis.progression:
        grouped[(row.family, row.scenario, row.tier)].append(row)
    for (family, scenario, tier), members in grouped.items():
        base = members[0].baseline_engine
        threads = sorted({r.threads for r in members})
        out += [f"**{family}, tier {tier}, {scenario}: baseline {base}**", ""]
        base_value = {r.threads: r.baseline for r in members}
        lines = [
            [
                f"{base} (TPS)",
                *(_steady_tps(base_value[t]) if t in base_value else "-" for t in threads),
            ]
        ]
        for engine in dict.fromkeys(r.engine for r in members):
            mine = {r.threads: r for r in members if r.engine == engine}
            lines += [
                [
                    f"{engine} (TPS)",
                    *(_steady_tps(mine[t].value) if t in mine else "-" for t in threads),
                ],
                [
                    f"vs {base}",
                    *(with_interval(mine[t].change) if t in mine else "-" for t in threads),
                ],
                [
                    "verdict",
                    *(_verdict(mine[t].change) if t in mine else "-" for t in threads),
                ],
                [
                    f"whole run vs {base}",
                    *(percent(mine[t].whole_run_diff_pct) if t in mine else "-" for t in threads),
                ],
            ]
        out += table(["Engine", *(f"{t}t" for t in threads)], lines)
    return out


def differences(analysis: Analysis, charts: list[Path]) -> list[str]:
    options = analysis.options
    out = [
        f"## 5. All significant differences greater than {options.threshold:g}% versus the "
        "baseline",
        "",
        "Only differences whose 95% interval excludes zero are listed; "
        + (
            f"a no-change comparison on this host spans {options.noise_floor.describe()}."
            if options.noise_floor is not None
            else "no noise floor was measured on this host (`oltplab calibrate ENGINE`)."
        ),
        "",
    ]
    if not analysis.differences:
        return [*out, f"No significant difference beyond {options.threshold:g}%.", ""]
    for scenario in analysis.dataset.scenarios:
        mine = [r for r in analysis.differences if r.scenario == scenario]
        if mine:
            out += [f"### {scenario_title(scenario, analysis.dataset.workloads)}", ""]
            out += table(
                [
                    "Comparison",
                    "Tier",
                    "Thread count",
                    "Difference vs baseline [95% interval]",
                    "Whole run",
                    "n",
                ],
                [
                    [
                        f"{r.engine} vs {r.baseline_engine}",
                        r.tier,
                        str(r.threads),
                        (with_interval(r.change) if r.change else "no per-second data")
                        + (" †" if r.flags else ""),
                        percent(r.whole_run_diff_pct),
                        str(r.change.n) if r.change else "-",
                    ]
                    for r in mine
                ],
            )
    return out


def findings(analysis: Analysis, charts: list[Path]) -> list[str]:
    rows = [
        [FINDING_TITLES.get(f.kind, f.kind), f.scenario, f.tier, f.engine, f.detail]
        for f in analysis.findings
    ]
    out = ["## 6. Key findings", "", "Computed from the data above, never written by hand.", ""]
    out += table(["Finding", "Scenario", "Tier", "Engine", "Detail"], rows)
    if analysis.left_out:
        out += [
            f"Left out of these findings: {len(analysis.left_out)} measured cell(s) whose "
            "numbers are in doubt (`--include-flagged` counts them; ignored errors count only "
            f"above {ERROR_RATE_LIMIT:.1%} of transactions):",
            "",
        ]
        out += table(
            ["Scenario", "Engine", "Tier", "Threads", "Run", "Why"],
            [
                [c.scenario, c.engine, c.tier, str(c.threads), str(c.repetition), c.flags_shown]
                for c in analysis.left_out
            ],
        )
    return out


def _ratio(found: Ratio) -> str:
    if found.steady is None:
        return f"{found.whole_run:.2f} (whole run)"
    steady = found.steady
    if steady.low is None or steady.high is None:
        return f"{steady.point:.2f} ({steady.method})"
    return f"{steady.point:.2f} [{steady.low:.2f}, {steady.high:.2f}]"


def relative(analysis: Analysis, charts: list[Path]) -> list[str]:
    dataset, base = analysis.dataset, analysis.relative_engine
    out = [
        f"## 7. Relative throughput (baseline {base} = 1.0)",
        "",
        "Steady TPS over the baseline engine's, with the 95% interval of the ratio.",
        "",
    ]
    for (scenario, tier), table_ in analysis.relative.items():
        threads = dataset.threads(scenario, tier)
        out += [f"**{scenario}, tier {tier}**", ""]
        if kinds := cross_family(dataset, list(table_)):
            out += [f"Cross-family ({kinds}): see Results by scenario and tier.", ""]
        out += _chart(charts, chart_stem("relative", scenario, tier))
        out += table(
            ["Engine", *(f"{t}t" for t in threads)],
            [[e, *(_ratio(v[t]) if t in v else "-" for t in threads)] for e, v in table_.items()],
        )
    return out


def stability(analysis: Analysis, charts: list[Path]) -> list[str]:
    dataset = analysis.dataset
    out = [
        "## 8. Stability",
        "",
        "Jitter is the standard deviation of per-second TPS over its mean, after the warm-up "
        "transient is cut ("
        + (
            "MSER-5, White 1997"
            if dataset.fixed_cut is None
            else f"a fixed {dataset.fixed_cut} s, --cut-seconds"
        )
        + "); 'steady from' is the first second counted.",
        "",
    ]
    for scenario in dataset.scenarios:
        for tier in dataset.tiers(scenario):
            mine = [
                s for s in analysis.stability if (s.cell.scenario, s.cell.tier) == (scenario, tier)
            ]
            if not mine:
                continue
            out += [f"**{scenario}, tier {tier}**", ""]
            out += _chart(charts, chart_stem("timeline", scenario, tier))
            out += _chart(charts, chart_stem("boxplot", scenario, tier))
            out += table(
                [
                    "Engine",
                    "Threads",
                    "Run",
                    "Steady from second",
                    "Mean TPS [95%]",
                    "Median",
                    "Std dev",
                    "Jitter (CV)",
                    "Min",
                    "p5",
                    "p95",
                ],
                [
                    [
                        s.cell.engine,
                        str(s.cell.threads),
                        str(s.cell.repetition),
                        str(s.steady_from),
                        estimate(s.mean),
                        number(s.median),
                        number(s.std),
                        "-" if s.jitter is None else f"{s.jitter * 100:.1f}%",
                        number(s.minimum),
                        number(s.p5),
                        number(s.p95),
                    ]
                    for s in mine
                ],
            )
    if analysis.repetitions:
        out += ["**Across repetitions: mean of the repetition means, with its 95% interval**", ""]
        out += table(
            ["Scenario", "Tier", "Engine", "Threads", "Runs", "Mean TPS [95%]"],
            [
                [r.point[0], r.point[1], r.point[2], str(r.point[3]), str(r.reps), estimate(r.mean)]
                for r in analysis.repetitions
            ],
        )
    return out


def pairwise(analysis: Analysis, charts: list[Path]) -> list[str]:
    dataset, subject, chosen = analysis.dataset, analysis.subject, analysis.compared_with
    against = ", ".join(chosen) if chosen else "each other engine"
    out = [f"## 9. Pairwise comparison: {subject} against {against}", ""]
    for pair in analysis.pairwise:
        engines = [subject, *pair.others]
        if kinds := cross_family(dataset, engines):
            out += [f"Cross-family ({kinds}): see Results by scenario and tier.", ""]
        out += [f"**QPS, {pair.scenario}, tier {pair.tier}**", ""]
        out += table(
            ["Threads", *engines],
            [[str(t), *(number(pair.qps[e].get(t)) for e in engines)] for t in pair.threads],
        )
        for percentile, by_engine in pair.latency.items():
            if not any(by_engine[e] for e in engines):
                continue
            out += [f"**p{percentile} latency (ms), {pair.scenario}, tier {pair.tier}**", ""]
            out += table(
                ["Threads", *engines],
                [[str(t), *(number(by_engine[e].get(t)) for e in engines)] for t in pair.threads],
            )
        out += [
            f"**QPS improvement of {subject}, {pair.scenario}, tier {pair.tier}**",
            "",
            # A workload's queries per transaction are fixed, so the steady QPS ratio is
            # the steady TPS ratio, whose per-second samples give the interval.
            "Steady QPS with its 95% interval, and the whole-run QPS difference.",
            "",
        ]
        header = ["Threads"]
        for other in pair.others:
            header += [f"vs {other}", f"vs {other}, whole-run QPS"]
        lines = [
            [
                str(t),
                *(
                    cell
                    for o in pair.others
                    for cell in (
                        with_interval(pair.improvement.get(o, {}).get(t)),
                        percent(pair.whole_run_improvement.get(o, {}).get(t)),
                    )
                ),
            ]
            for t in pair.threads
        ]
        lines.append(
            [
                "**Average**",
                *(cell for o in pair.others for cell in (percent(pair.average_improvement(o)), "")),
            ]
        )
        out += table(header, lines)
    if len(out) == 2:
        out += ["Only one engine in these results.", ""]
    return out


def changes(analysis: Analysis, charts: list[Path]) -> list[str]:
    out = [
        "## 14. Where it changed",
        "",
        "Change points along each family's releases, oldest first, per scenario, tier and "
        "thread count: E-Divisive means with Hunter's t-test split and merge (p below 0.001), "
        "each release's repetitions its points. The size is the first changed release "
        "against the last good one, steady, with its interval.",
        "",
        *[f"{line}\n" for line in no_change_sentences(analysis.releases)],
        *[f"{line}\n" for line in disagreement_sentences(analysis.releases)],
    ]
    groups: dict[tuple[str, str, str], list[Change]] = defaultdict(list)
    for change in analysis.changes:
        groups[(change.series, change.last_good, change.first_changed)].append(change)
    rows = []
    for (family, good, changed), found in groups.items():
        cells = "; ".join(
            f"{c.scenario} {c.tier} {c.threads}t: {with_interval(c.size)}" for c in found
        )
        rows.append([family, good, changed, str(len(found)), cells])
    if rows:
        out += table(["family", "last good", "first changed", "cells", "size in each"], rows)
    for family, scenario, tier in dict.fromkeys((s.family, s.scenario, s.tier)
                                                for s in analysis.releases):  # fmt: skip
        out += _chart(charts, chart_stem("releases", family, scenario, tier))
    return out
