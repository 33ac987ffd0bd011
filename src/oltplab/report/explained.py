"""A bisection, told: every step with its measurements and interval, the release that
changed, and what explains the change (settings, per-transaction costs, functions)."""

from __future__ import annotations

from pathlib import Path

from oltplab.analysis.bisection import Bisection
from oltplab.analysis.explain import Explanation
from oltplab.base.wording import counted
from oltplab.report.format import code, table, without_html


def bisect_markdown(
    found: Bisection, explanation: Explanation | None, flamegraph: Path | None
) -> str:
    cell = found.cell
    lines = [
        f"# Bisection: {found.releases[0]} to {found.releases[-1]}",
        "",
        f"Cell: tier {cell.tier}, {cell.workload}, {counted(cell.threads, 'thread')}; releases in "
        f"order: {', '.join(found.releases)}. The first and the last differ when their 90% "
        f"interval (paired by round) lies beyond ±{found.threshold_pct:g}%; a release between "
        "them goes to the end it is like, once its interval lies wholly on one side of "
        "halfway.",
        "",
        f"**{found.verdict}**",
        "",
        f"Between-session spread on this host: {found.session_spread}; each step's interval "
        "is widened by it (the interval within its run is beside it)."
        if found.session_spread
        else "No between-session spread was stored for this host: each step's interval "
        "allows for the noise within its run only.",
        "",
    ]
    lines += table(
        ["step", "measured", "against", "rounds", "result", "within the run", "results"],
        [
            [
                str(s.number), s.measured, s.known, str(s.repetitions),
                s.judged.describe() + (" (placed by its point)" if s.leaning else ""),
                s.within.with_interval() if s.within else "-",
                code(s.folder.name),
            ]
            for s in found.steps
        ],
    )  # fmt: skip
    if explanation is not None:
        lines += explanation_markdown(explanation, flamegraph)
    # Release and engine names are the user's: shown as the report shows them.
    return "\n".join(without_html(line) for line in lines) + "\n"


def explanation_markdown(found: Explanation, flamegraph: Path | None) -> list[str]:
    lines = [f"## What differs: {found.after} against {found.before}", ""]
    lines += ["### Settings whose values differ (SHOW GLOBAL VARIABLES)", ""]
    lines += (
        table(["variable", found.before, found.after], [list(r) for r in found.settings])
        if found.settings
        else ["None.", ""]
    )
    lines += ["### Per transaction", ""]
    lines += table(
        ["figure", found.before, found.after],
        [
            [name, "-" if a is None else f"{a:,.2f}", "-" if b is None else f"{b:,.2f}"]
            for name, a, b in found.operations
        ],
    )
    lines += ["### On-CPU profile: functions that gained the most own samples per transaction", ""]
    for engine, notes in found.unprofiled.items():
        said = (
            "its cells' notes: " + "; ".join(n or "none" for n in notes)
            if notes
            else "it has no measured cell"
        )
        lines += [f"No profile of {engine} ({said}).", ""]
    if found.functions:
        lines += table(
            ["function", found.before, found.after, "gained"],
            [
                [f.function, f"{f.before:.4f}", f"{f.after:.4f}", f"{f.gained:+.4f}"]
                for f in found.functions
            ],
        )
        if flamegraph is not None:
            lines += [f"Differential flame graph: [{flamegraph.name}]({flamegraph.name})", ""]
    return lines
