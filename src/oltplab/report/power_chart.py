"""The power curve drawn: the share of trials decided DIFFERENT against the planted size,
one line per margin, each share with its exact 95% interval, from the trials bench/power.py
recorded (analysis/power.py). The report's precision section shows it beside the rule it
measures; the docs build draws the same figure from the committed trials (power_docs.py).
"""

from __future__ import annotations

from matplotlib.figure import Figure

from oltplab.analysis.power import CurvePoint, Trial

CHART_FILE = "power-curve.png"
# One line per margin: (planted size, share DIFFERENT, its 95% interval, trials).
CurveData = dict[float, list[tuple[float, float, float, float, int]]]


def curve_data(points: list[CurvePoint]) -> CurveData:
    data: CurveData = {}
    for p in points:
        low, high = p.different_interval
        data.setdefault(p.margin_pct, []).append(
            (p.planted_pct, p.share_different, low, high, p.trials)
        )
    return data


def measured_where(trials: list[Trial]) -> str:
    """`12 trials on vm (2 cores, AMD EPYC), 2026-11-28 to 2026-11-29`"""
    hosts = sorted(
        {
            f"{t.host.get('hostname')} ({t.host.get('cores')} cores, {t.host.get('cpu_model')})"
            for t in trials
        }
    )
    days = sorted({t.started_at.date().isoformat() for t in trials})
    when = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
    count = f"{len(trials)} trial{'s' * (len(trials) != 1)}"
    return f"{count} on {', '.join(hosts)}, {when}"


def draw_power(figure: Figure, data: CurveData, title: str) -> None:
    axis = figure.subplots()
    margins = sorted(data)
    for index, margin in enumerate(margins):
        line = data[margin]
        # Each margin's points a little apart, so that equal shares do not hide each other.
        dodge = (index - (len(margins) - 1) / 2) * 0.08
        xs = [p[0] + dodge for p in line]
        shares = [p[1] for p in line]
        below = [p[1] - p[2] for p in line]
        above = [p[3] - p[1] for p in line]
        axis.errorbar(
            xs, shares, yerr=[below, above], marker="o", capsize=3, label=f"margin ±{margin:g}%"
        )
    axis.set_xlabel("planted difference, % of TPS (0: A/A pairs)")
    axis.set_ylabel("share of trials decided DIFFERENT")
    axis.set_ylim(-0.03, 1.03)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    axis.set_title(title, fontsize=9)
