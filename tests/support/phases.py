"""Where the engine stage's time went: every run's `phases:` line summed over the session's
results, the searches whose budget ran out, and the clusters the tests started."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

from oltplab.experiments.until_answered import BUDGET_SPENT
from oltplab.measure.phases import Stage, read_phases

# Seconds spent starting and stopping the clusters the tests bring up (Slurm, Kubernetes),
# by what they started.
CLUSTERS: dict[str, float] = {}


@contextlib.contextmanager
def cluster_time(what: str) -> Iterator[None]:
    """Counts the time of a cluster's start or stop in the session's phase table."""
    started = time.monotonic()
    try:
        yield
    finally:
        CLUSTERS[what] = CLUSTERS.get(what, 0.0) + time.monotonic() - started


def _budget_seconds(line: str) -> float:
    """`... precision: budget spent: 61.3 s of 60 s` -> 61.3."""
    return float(line.split(BUDGET_SPENT, 1)[1].split()[0])


def phase_table(root: Path) -> list[str]:
    """The table's lines: each stage's seconds summed over every oltplab.log under root,
    the searches stopped by their budget, and the clusters; none when no run logged its
    phases (a session of fast tests alone)."""
    total = dict.fromkeys(Stage, 0.0)
    runs = budgets = 0
    budget_seconds = 0.0
    for log in root.rglob("oltplab.log"):
        try:
            lines = log.read_text(errors="replace").splitlines()
        except OSError:
            continue
        for stage, seconds in read_phases(lines).items():
            total[stage] += seconds
        runs += sum(" phases: " in line for line in lines)
        spent = [_budget_seconds(line) for line in lines if BUDGET_SPENT in line]
        budgets += len(spent)
        budget_seconds += sum(spent)
    labels = [str(stage) for stage in Stage] + [f"cluster: {what}" for what in CLUSTERS]
    if not runs:
        return []
    width = max(len(label) for label in [*labels, "budgets spent"]) + 2
    measured = sum(total.values())
    lines = [f"{'phase':<{width}}{'seconds':>9}{'share':>8}"]
    for stage, seconds in total.items():
        share = f"{seconds / measured:.0%}" if measured else "-"
        lines.append(f"{stage!s:<{width}}{seconds:9.0f}{share:>8}")
    lines.append(f"{'all runs':<{width}}{measured:9.0f}   ({runs} runs)")
    lines.append(
        f"{'budgets spent':<{width}}{budget_seconds:9.0f}   ({budgets} searches stopped by "
        "their budget; within the runs above)"
    )
    for what, seconds in sorted(CLUSTERS.items()):
        lines.append(f"{'cluster: ' + what:<{width}}{seconds:9.0f}")
    return lines
