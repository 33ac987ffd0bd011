"""The report's latency sections: whole distributions per point, latency against the load
offered, and closed loop beside open loop."""

from __future__ import annotations

from pathlib import Path

from oltplab.analysis.latency import PERCENTILES
from oltplab.analysis.model import Analysis
from oltplab.analysis.openloop import KNEE_FACTOR, OMISSION_FACTOR, LatencyPoint, label
from oltplab.base.wording import counted
from oltplab.report.format import estimate, number, table

LABELS = [label(q) for q in PERCENTILES]


def _load(found: LatencyPoint) -> str:
    if not found.rate:
        return "closed loop"
    said = f"{found.rate:,} offered, {number(found.achieved)} served"
    return said + (" (**saturated**: a lower bound)" if found.saturated else "")


def distributions(analysis: Analysis, charts: list[Path]) -> list[str]:
    found = analysis.latency
    if not found:
        return []
    out = [
        "## 15. Latency distributions",
        "",
        "From each run's whole histogram (sysbench --histogram), the runs of a point merged "
        "(never percentiles averaged); p99 with its 95% interval (a bootstrap over the runs, "
        "or over one run's events). Open-loop cells count the time a transaction waited "
        "for its turn; a saturated one served less than offered, so its latency is a lower "
        "bound.",
        "",
    ]
    rows = []
    for (scenario, tier, engine, threads), point in sorted(found.items()):
        p = point.percentiles
        rows.append(
            [scenario, tier, engine, str(threads), _load(point)]
            + [number(p[name].point) if name in p else "-" for name in LABELS]
            + [estimate(p.get("p99")), number(point.maximum)]
        )
    headers = ["scenario", "tier", "engine", "threads", "load", *LABELS, "p99 [95%]", "max"]
    return out + table(headers, rows)


def curves(analysis: Analysis, charts: list[Path]) -> list[str]:
    if not analysis.curves:
        return []
    out = [
        "## 16. Latency against offered load",
        "",
        f"The knee is the last rate offered before p99 passes {KNEE_FACTOR:g} times its value "
        "at the lightest load, or before the queue grew.",
        "",
    ]
    for curve in analysis.curves:
        place = "network" if curve.network else "local"
        threads = counted(curve.threads, "thread") if curve.threads else "threads by rate"
        out += [f"**{curve.engine}, {curve.workload} {place}, tier {curve.tier}, {threads}**", ""]
        out += table(
            ["offered", "served", *LABELS],
            [
                [f"{p.rate:,}", number(p.achieved) + (" (saturated)" if p.saturated else "")]
                + [number(p.percentiles[n].point) if n in p.percentiles else "-" for n in LABELS]
                for p in curve.points
            ],
        )
        knee = f"{curve.knee:,} transactions a second" if curve.knee else "below the lightest load"
        out += [f"Knee: {knee}.", ""]
    out += [f"![{p.stem}]({p.as_posix()})\n" for p in charts if p.stem.startswith("latency_")]
    return out


def capacity(analysis: Analysis, charts: list[Path]) -> list[str]:
    """`oltplab capacity`'s ranking, beside the curves its probes drew."""
    found = analysis.capacities
    if not found:
        return []
    out = [
        f"## 16a. Capacity at `{found[0].objective}`",
        "",
        "The highest rate offered whose percentile's interval lay under the objective, "
        "bracketed by the lowest that did not (bracketing, then bisection over rates), "
        "ranked; beside it the closed-loop peak of the same run. Each probe's client threads "
        "come from the engine's time per transaction (Little's law, with headroom, at most "
        "4 a core), the median latency of the last rate that met the objective once there "
        "is one; a rate needing more runs with the most there may be, and a miss there is "
        "the client's limit, never the engine's. On the "
        "chart above, the dashed line is the objective: the capacity is where the curve "
        "crosses it, the knee where it starts to climb.",
        "",
    ]
    rows = [
        [row.engine, row.tier, row.text(),
         "-" if row.closed_peak is None else f"{row.closed_peak:,.0f} tps",
         "-" if row.share_of_peak is None else f"{row.share_of_peak:.0%}"]
        for row in found
    ]  # fmt: skip
    return out + table(["engine", "tier", "sustains", "closed-loop peak", "of the peak"], rows)


def omission(analysis: Analysis, charts: list[Path]) -> list[str]:
    if not analysis.omissions:
        return []
    out = [
        "## 17. Closed loop against open loop",
        "",
        "The same engine and thread count, its clients waiting for each answer (closed loop) "
        "or offering transactions at a fixed rate (open loop). A closed-loop client stops "
        "asking while the server stalls, so the stall hides from its percentiles "
        "(coordinated omission).",
        "",
    ]
    rows, sentences = [], []
    for found in analysis.omissions:
        closed, opened = found.closed, found.open
        _scenario, tier, engine, threads = opened.point
        ratio = found.ratio
        rows.append(
            [
                engine, tier, str(threads), f"{opened.rate:,}",
                estimate(closed.percentiles.get("p99")), estimate(opened.percentiles.get("p99")),
                "-" if ratio is None else f"{ratio:.1f}x",
            ]
        )  # fmt: skip
        if ratio is not None and ratio > OMISSION_FACTOR:
            sentences.append(
                f"- {engine}, tier {tier}, {counted(threads, 'thread')}, {opened.rate:,} offered: "
                f"users wait {ratio:.1f} times longer at p99 than the closed loop reports."
            )
    headers = ["engine", "tier", "threads", "offered", "closed-loop p99", "open-loop p99",
               "open / closed"]  # fmt: skip
    return out + table(headers, rows) + sentences + ([""] if sentences else [])
