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
# one line per start or stop, in the session's folder: every lane appends to it.
CLUSTER_TIMES = "cluster-times.tsv"
_SESSION_FOLDER: list[Path] = []


def keep_cluster_times_in(folder: Path) -> None:
    _SESSION_FOLDER[:] = [folder]


@contextlib.contextmanager
def cluster_time(what: str) -> Iterator[None]:
    """Counts the time of a cluster's start or stop in the session's phase table."""
    started = time.monotonic()
    try:
        yield
    finally:
        for folder in _SESSION_FOLDER:
            with (folder / CLUSTER_TIMES).open("a") as times:
                times.write(f"{what}\t{time.monotonic() - started:.3f}\n")


def _cluster_seconds(root: Path) -> dict[str, float]:
    seconds: dict[str, float] = {}
    with contextlib.suppress(FileNotFoundError):
        for line in (root / CLUSTER_TIMES).read_text().splitlines():
            what, spent = line.split("\t")
            seconds[what] = seconds.get(what, 0.0) + float(spent)
    return seconds


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
    clusters = _cluster_seconds(root)
    labels = [str(stage) for stage in Stage] + [f"cluster: {what}" for what in clusters]
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
    for what, seconds in sorted(clusters.items()):
        lines.append(f"{'cluster: ' + what:<{width}}{seconds:9.0f}")
    return lines
