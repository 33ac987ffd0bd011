"""The report's section on precision: each comparison's verdict against the run's target,
the smallest difference each could have told apart, and the version progression and
change points on the per-transaction measures (the server's CPU and context switches per
transaction), which another load on the host moves far less than TPS."""

from __future__ import annotations

from pathlib import Path

from oltplab.analysis.model import Analysis
from oltplab.analysis.precision import DIFFERENT, MIN_ROUNDS
from oltplab.base.metrics import MEASURES
from oltplab.report.format import table, with_interval
from oltplab.report.power_chart import CHART_FILE

ROUNDS = {
    "alternating": "The rounds alternated: each engine started and warmed up once, the "
    "cells of a round back to back, seconds apart.",
    "sliced": "The rounds were sliced: each engine started and warmed up once, the cells of "
    "a round run at the same time, each in its own short time slots in turn.",
    "interleaved": "The rounds were interleaved: each cell a session of its own (the datadir "
    "restored, the engine started and warmed up).",
}


def section(analysis: Analysis, charts: list[Path]) -> list[str]:
    out = ["## 18. Precision and per-transaction cost", ""]
    out += _answers(analysis)
    out += _power(charts)
    out += _costs(analysis)
    return out


def _power(charts: list[Path]) -> list[str]:
    """How often the rule decided right in real trials, where they are packed."""
    found = [p for p in charts if p.name == CHART_FILE]
    if not found:
        return []
    return [
        "How often this rule decides right, measured in real trials (each a search at "
        "±1% of a base workload, its A/A twin and one with a planted difference; the same "
        "rounds judged at ±0.5% and ±3% too; `bench/power.py`): the share of trials "
        "decided DIFFERENT by planted size, each with its exact 95% interval. A/A pairs are "
        "at 0: any DIFFERENT there is a false call. The trials' host is in the title; on "
        "another host the figures may differ.",
        "",
        f"![power curve]({found[0].as_posix()})",
        "",
    ]


def _answers(analysis: Analysis) -> list[str]:
    target = analysis.target
    if target is None:
        return [
            "This run set no precision target (`oltplab run --margin 3%` adds paired "
            "rounds until every comparison is decided).",
            "",
        ]
    out = [
        f"The run measured until every comparison was decided on {target.measure.label} "
        f"against ±{target.margin_pct:g}%, judged on its paired 90% interval from round "
        f"{MIN_ROUNDS} on: DIFFERENT when the interval lies beyond the margin, SAME when it "
        "lies within it, UNKNOWN when the budget ran out first. *Could detect* is the "
        "smallest true difference that would have been decided DIFFERENT with the interval "
        "this data gave: the margin plus the interval's half-width. "
        + ROUNDS.get(analysis.dataset.order, ""),
        "",
    ]
    if not analysis.answers:
        return [*out, "No comparison: one engine, tier and workload only.", ""]
    canary = analysis.canary
    unfit = " (host unfit: see the canary)" if canary is not None and canary.unfit else ""
    rows = [
        [
            answer.label,
            with_interval(answer.comparison) if answer.comparison else "-",
            f"**{answer.verdict}**" + (unfit if answer.verdict == DIFFERENT else ""),
            str(answer.rounds),
            "-" if answer.detectable_pct is None else f"±{answer.detectable_pct:.1f}%",
        ]
        for answer in analysis.answers
    ]
    out += table(
        ["Comparison", "Difference [90% interval]", "Verdict", "Rounds", "Could detect"], rows
    )
    return out + ([canary.describe(), ""] if canary is not None else [])


def _costs(analysis: Analysis) -> list[str]:
    if not analysis.cost_points:
        return ["No per-transaction series (results from before the load sampler).", ""]
    out = []
    for name, rows in analysis.costs.items():
        measure = MEASURES[name]
        unit = f" ({measure.unit})" if measure.unit else ""
        out += [f"**Version progression on {measure.label}{unit}**", ""]
        if not rows:
            out += ["No family has more than one version in these results.", ""]
            continue
        out += table(
            ["Engine", "Baseline", "Scenario", "Tier", "Threads", "Cost", "vs baseline [95%]"],
            [
                [
                    r.engine,
                    r.baseline_engine,
                    r.scenario,
                    r.tier,
                    str(r.threads),
                    measure.format(r.value.whole_run),
                    with_interval(r.change) if r.change else "-",
                ]
                for r in rows
            ],
        )
        changes = analysis.cost_changes.get(name, [])
        if changes:
            out += [
                f"Change points on {measure.label}: "
                + "; ".join(
                    f"{c.series} {c.last_good} -> {c.first_changed} ({c.scenario} {c.tier} "
                    f"{c.threads}t): {with_interval(c.size)}"
                    for c in changes
                ),
                "",
            ]
    return out
