"""The report's first screen: what was compared, the headline verdicts with their
intervals, how many cells were measured, failed and flagged, and the one command to run
next. Every figure is one the sections below print in full."""

from __future__ import annotations

from oltplab.analysis.comparability import mismatches
from oltplab.analysis.estimate import Comparison
from oltplab.analysis.model import Analysis
from oltplab.report.format import code, with_interval
from oltplab.store.status import Status

TITLE = "Summary"
# Headline lines shown at most: the summary stays one screen; the rest are in the section.
HEADLINES = 6


def _listed(names: list[str]) -> str:
    return (
        ", ".join(names) if len(names) <= 6 else f"{', '.join(names[:5])} and {len(names) - 5} more"
    )


def _compared(analysis: Analysis) -> str:
    dataset = analysis.dataset
    engines, tiers = dataset.engine_names(), dataset.tiers()
    threads = [str(t) for t in sorted({c.threads for c in dataset.cells})]
    return (
        f"Compared: {len(engines)} engine{'s' * (len(engines) != 1)} ({_listed(engines)}) "
        f"on {_listed(dataset.scenarios)}; tier{'s' * (len(tiers) != 1)} {_listed(tiers)}; "
        f"{'threads' if len(threads) > 1 else 'thread count'} {_listed(threads)}."
    )


def _cells(analysis: Analysis) -> str:
    cells = analysis.dataset.cells
    done = [c for c in cells if c.measured]
    failed = sum(c.status == Status.FAILED for c in cells)
    others = len(cells) - len(done) - failed
    flagged = sum(bool(c.flags) for c in done)
    text = f"Cells: {len(done)} measured, {failed} failed, {flagged} flagged"
    if others:
        text += f", {others} not measured (pending, running or without a result)"
    if analysis.left_out:
        text += f" ({len(analysis.left_out)} left out of the key findings as in doubt)"
    return text + ("; see Flagged and failed cells." if failed or flagged else ".")


def _canary(analysis: Analysis) -> list[str]:
    canary = analysis.canary
    if canary is None:
        return []
    said = canary.describe()
    return [f"**{said}**" if canary.unfit else said, ""]


def _headlines(analysis: Analysis) -> list[str]:
    """The subject against each other engine at the most threads both measured, per
    scenario and tier: the difference of steady throughput with its 95% interval."""
    found: list[tuple[str, str, int, str, Comparison]] = []
    for pair in analysis.pairwise:
        for other in pair.others:
            by_threads = pair.improvement.get(other, {})
            if by_threads:
                most = max(by_threads)
                found.append((pair.scenario, pair.tier, most, other, by_threads[most]))
    if not found:
        return []
    chosen = analysis.compared_with
    against = ", ".join(chosen) if chosen else "each other engine"
    other = "Other figures: s" if analysis.answers else "S"
    out = [
        f"{other}teady throughput of {analysis.subject} against {against}, 95% intervals "
        "(each cell's own, unpaired):",
        "",
    ]
    for scenario, tier, threads, other, versus in found[:HEADLINES]:
        interval = with_interval(versus)
        verdict = "" if versus.low_pct is None else f", {versus.verdict}"
        out.append(
            f"- {scenario}, tier {tier}, {threads} thread{'s' * (threads != 1)}: "
            f"vs {other} {interval}{verdict}"
        )
    if len(found) > HEADLINES:
        out.append(f"- and {len(found) - HEADLINES} more in Pairwise comparison")
    return [*out, ""]


def _verdicts(analysis: Analysis) -> list[str]:
    """A run measured to a margin leads with its verdicts, as it printed them."""
    target = analysis.target
    if target is None or not analysis.answers:
        return []
    return [
        f"Verdicts on {target.measure.label} against ±{target.margin_pct:g}%, on paired 90% "
        "intervals, as the run printed them:",
        "",
        *[f"- {answer.describe()}" for answer in analysis.answers],
        "",
    ]


def _next(analysis: Analysis) -> str:
    """One command: why cells failed, else whether the numbers come back on a second run
    (run.json describes it), else the findings as a table to keep."""
    dataset = analysis.dataset
    sources = " ".join(str(s) for s in dataset.sources)
    if any(c.status == Status.FAILED for c in dataset.cells):
        return f"Next: {code(f'oltplab status {sources}')} says why the failed cells failed."
    first = str(dataset.sources[0])
    if first in dataset.run_records:
        again = f"oltplab rerun {first} --results {first}-again"
        return f"Next: {code(again)} measures it all again, to see whether it reproduces."
    export = f"oltplab export {sources} --table findings"
    return f"Next: {code(export)} writes the key findings as CSV."


def _unalike(analysis: Analysis) -> list[str]:
    """How the results directories shown side by side were not measured alike."""
    found = mismatches(analysis.dataset.traits)
    if not found:
        return []
    said = [f"- {code(m.describe())}" for m in found]
    return ["Not measured alike (a difference between them may be the setup's):", "", *said, ""]


def summary(analysis: Analysis) -> list[str]:
    return [
        f"## {TITLE}",
        "",
        *_verdicts(analysis),
        _compared(analysis),
        "",
        _cells(analysis),
        "",
        *_canary(analysis),
        *_unalike(analysis),
        *_headlines(analysis),
        _next(analysis),
        "",
    ]
