"""The report as Markdown: the reference report's sections, read from the analysis.

Figures with an interval are steady estimates, printed with the interval made from the
same seconds; the figures sysbench printed for whole runs are labelled as such."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from oltplab.analysis.estimate import Comparison, Estimate
from oltplab.analysis.model import Analysis
from oltplab.analysis.points import Grid, Value, cross_family
from oltplab.analysis.tables import ProgressionRow, Ratio
from oltplab.metrics import percentile_of
from oltplab.plan import safe_name
from oltplab.report.environment import configuration, environment
from oltplab.report.format import (
    CROSS_FAMILY,
    number,
    percent,
    scenario_title,
    table,
    telemetry_chart_name,
    without_html,
)
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
    "saturation": "Saturation point",
    "collapse": "Collapse after the peak",
    "buffer-pool-lever": "Buffer pool lever",
    "ro-rw-ratio": "Read-only / read-write ratio",
    "network-overhead": "Network overhead",
    "close-engines": "Engines within 3% everywhere",
}


def estimate(value: Estimate | None, shown: str = "{}") -> str:
    """1,234 [1,201, 1,266]; without an interval, what stands in its way."""
    if value is None:
        return "-"
    point = shown.format(number(value.point))
    if value.low is None or value.high is None:
        return f"{point} ({value.method})"
    return f"{point} [{shown.format(number(value.low))}, {shown.format(number(value.high))}]"


def with_interval(versus: Comparison | None) -> str:
    """-20.2% [-23.1, -17.0]; an undecided comparison says why instead of an interval."""
    if versus is None:
        return "-"
    if versus.low_pct is None:
        return f"{percent(versus.diff_pct)} ({versus.verdict})"
    return f"{percent(versus.diff_pct)} {versus.interval()}"


def mark(value: Value | None, formatted: str) -> str:
    return f"{formatted} †" if value is not None and value.flags else formatted


def _chart(charts: list[Path], stem: str) -> list[str]:
    return [f"![{stem}]({p.as_posix()})\n" for p in charts if p.stem == stem]


# --- sections 3 to 9 ---------------------------------------------------------------------------


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


def _results(analysis: Analysis) -> list[str]:
    dataset = analysis.dataset
    out = [
        "## 3. Results by scenario and tier",
        "",
        "What sysbench printed for each whole run (mean over repetitions), as the reference "
        "report tables it; the steady estimates with their intervals are in sections 4 to 9. "
        "† marks a value with a validity flag (see section 10).",
        "",
    ]
    if kinds := cross_family(dataset, dataset.engine_names()):
        out += [CROSS_FAMILY.format(kinds=kinds), ""]
    by_metric = {m: {(g.scenario, g.tier): g for g in found} for m, found in analysis.grids.items()}
    failed = {
        (c.scenario, c.tier, c.engine, c.threads) for c in dataset.cells if c.status == "failed"
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


def _progression(analysis: Analysis) -> list[str]:
    out = [
        "## 4. Version progression",
        "",
        "TPS over the steady seconds (after each run's warm-up cut) and the difference with "
        "its 95% interval, both from those seconds; the last row is the difference of the "
        "whole-run figures of section 3.",
        "",
    ]
    if not analysis.progression:
        return out + ["No family has more than one version in these results.", ""]
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
                    *(
                        (mine[t].change.verdict if mine[t].change else "no per-second data")
                        if t in mine
                        else "-"
                        for t in threads
                    ),
                ],
                [
                    f"whole run vs {base}",
                    *(percent(mine[t].whole_run_diff_pct) if t in mine else "-" for t in threads),
                ],
            ]
        out += table(["Engine", *(f"{t}t" for t in threads)], lines)
    return out


def _differences(analysis: Analysis) -> list[str]:
    options = analysis.options
    out = [
        f"## 5. All significant differences greater than {options.threshold:g}% versus the "
        "baseline",
        "",
        "Only differences whose 95% interval excludes zero are listed; "
        + (
            f"a no-change comparison on this host spans ±{options.noise_floor:.1f}% "
            "(`oltplab calibrate`)."
            if options.noise_floor is not None
            else "no noise floor was measured on this host (`oltplab calibrate ENGINE`)."
        ),
        "",
    ]
    if not analysis.differences:
        return out + [f"No significant difference beyond {options.threshold:g}%.", ""]
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


def _findings(analysis: Analysis) -> list[str]:
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


def _relative(analysis: Analysis, charts: list[Path]) -> list[str]:
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
            out += [f"Cross-family ({kinds}): see section 3.", ""]
        out += _chart(charts, f"relative_{scenario}_{safe_name(tier)}")
        out += table(
            ["Engine", *(f"{t}t" for t in threads)],
            [[e, *(_ratio(v[t]) if t in v else "-" for t in threads)] for e, v in table_.items()],
        )
    return out


def _stability(analysis: Analysis, charts: list[Path]) -> list[str]:
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
            out += _chart(charts, f"timeline_{scenario}_{safe_name(tier)}")
            out += _chart(charts, f"boxplot_{scenario}_{safe_name(tier)}")
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


def _pairwise(analysis: Analysis) -> list[str]:
    dataset, subject, chosen = analysis.dataset, analysis.subject, analysis.compared_with
    against = ", ".join(chosen) if chosen else "each other engine"
    out = [f"## 9. Pairwise comparison: {subject} against {against}", ""]
    for pair in analysis.pairwise:
        engines = [subject, *pair.others]
        if kinds := cross_family(dataset, engines):
            out += [f"Cross-family ({kinds}): see section 3.", ""]
        out += [f"**QPS, {pair.scenario}, tier {pair.tier}**", ""]
        out += table(
            ["Threads", *engines],
            [[str(t), *(number(pair.qps[e].get(t)) for e in engines)] for t in pair.threads],
        )
        for percentile, latency in pair.latency.items():
            if not any(latency[e] for e in engines):
                continue
            out += [f"**p{percentile} latency (ms), {pair.scenario}, tier {pair.tier}**", ""]
            out += table(
                ["Threads", *engines],
                [[str(t), *(number(latency[e].get(t)) for e in engines)] for t in pair.threads],
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


# --- sections 10 to 12 --------------------------------------------------------------------------


def _flags(analysis: Analysis) -> list[str]:
    out = ["## 10. Flagged and failed cells", ""]
    cells = analysis.flagged
    if not cells:
        return out + ["None: every cell ran its full length without errors.", ""]
    out += [
        "Legend: `empty` no output; `truncated` no final summary; `errors` / `reconnects` "
        "sysbench counted some (errors leave a cell in the key findings up to "
        f"{ERROR_RATE_LIMIT:.1%} of its transactions); `missing-intervals` / "
        "`extra-intervals` per-interval lines do not match the run length; `short` the run "
        "ended early; `stall` TPS under 10% of the cell's median for 3 s or more (notes "
        "give the seconds); "
        "`client-bound` sysbench used over 90% of the CPU it could get, so the client, not "
        "the engine, may have set the pace. Flagged cells are left out of the key findings "
        "unless --include-flagged.",
        "",
    ]
    return out + table(
        ["Scenario", "Engine", "Tier", "Threads", "Run", "Status", "Flags", "Reason", "Notes"],
        [
            [
                c.scenario,
                c.engine,
                c.tier,
                str(c.threads),
                str(c.repetition),
                c.status,
                c.flags_shown,
                c.reason,
                c.notes,
            ]
            for c in cells
        ],
    )


def _network(analysis: Analysis) -> list[str]:
    rows = analysis.network
    if not rows:
        return []
    out = [
        "## 12. Network: latency added per transaction",
        "",
        "Average latency with sysbench on another host than the engine, against both on one "
        "host. Each statement of a transaction is one round trip, so what the network adds "
        "per transaction, divided by the statements per transaction, is the time it adds "
        "per round trip.",
        "",
    ]
    for results, record in analysis.dataset.run_records.items():
        for engine, link in record.get("links", {}).items():
            shaping = link.get("shaping") or "none"
            out.append(
                f"- `{results}`, {engine}: measured round trip {link.get('rtt_ms', '?')} ms "
                f"(median `SELECT 1`), link shaping: {shaping}"
            )
    out.append("")
    out += table(
        [
            "engine",
            "mode",
            "tier",
            "threads",
            "local avg ms",
            "network avg ms",
            "added ms/txn",
            "round trips/txn",
            "added ms per round trip",
        ],
        [
            [
                r.engine,
                r.mode,
                r.tier,
                str(r.threads),
                f"{r.local_ms:.2f}",
                f"{r.network_ms:.2f}",
                f"{r.added_ms:+.2f}",
                f"{r.round_trips:.1f}",
                "-" if r.per_round_trip_ms is None else f"{r.per_round_trip_ms:+.3f}",
            ]
            for r in rows
        ],
    )
    for r in rows:
        if r.per_round_trip_ms is not None:
            out.append(
                f"- {r.engine} {r.mode} tier {r.tier}, {r.threads} thread(s): the network adds "
                f"{r.added_ms:.1f} ms per transaction = {r.round_trips:.0f} round trips x "
                f"{r.per_round_trip_ms:.2f} ms."
            )
    out.append("")
    return out


def _figure(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _telemetry(analysis: Analysis, charts: list[Path]) -> list[str]:
    rows = analysis.operations
    if not rows:
        return []
    out = [
        "## 11. Telemetry: per-operation figures and timelines",
        "",
        "Totals over each cell's steady seconds divided by its transactions, averaged over "
        "repetitions. CPU is the server process's (user + system, all threads); context "
        "switches (vmstat) and disk (iostat) are the host's, sysbench included.",
        "",
    ]
    out += table(
        [
            "scenario",
            "tier",
            "workload",
            "engine",
            "threads",
            "TPS",
            "CPU µs/txn",
            "cs/txn",
            "KB read/txn",
            "KB written/txn",
            "redo B/txn",
        ],
        [
            [
                r.scenario,
                r.tier,
                r.workload,
                r.engine,
                str(r.threads),
                number(r.tps),
                _figure(r.figures.cpu_us, 0),
                _figure(r.figures.context_switches),
                _figure(r.figures.kb_read, 2),
                _figure(r.figures.kb_written, 2),
                _figure(r.figures.redo_bytes, 0),
            ]
            for r in rows
        ],
    )
    for kind, cell in analysis.notable:
        found = analysis.timelines.get(cell.key)
        if found is None:
            continue
        stalls = ", ".join(f"{a}-{b} s" for a, b in found.stalls) or "none"
        out.append(
            f"**{kind.capitalize()} cell**: {found.label}, {number(cell.tps or 0)} TPS "
            f"(whole run); stalls: {stalls}; steady from second {found.steady_from}."
        )
        out.append("")
        out += [
            f"![{kind} cell]({p.as_posix()})\n"
            for p in charts
            if p.name == telemetry_chart_name(kind)
        ]
    return out


def render(analysis: Analysis, charts: list[Path]) -> str:
    dataset = analysis.dataset
    title = ", ".join(str(p) for p in dataset.sources)
    lines = [f"# oltplab report: {title}", ""]
    lines += environment(dataset)
    lines += configuration(dataset)
    lines += _results(analysis)
    lines += _progression(analysis)
    lines += _differences(analysis)
    lines += _findings(analysis)
    lines += _relative(analysis, charts)
    lines += _stability(analysis, charts)
    lines += _pairwise(analysis)
    lines += _flags(analysis)
    lines += _telemetry(analysis, charts)
    lines += _network(analysis)
    return "\n".join(without_html(line) for line in lines)
