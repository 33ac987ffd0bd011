"""Machines of a distributed run: each one's canary, the slow ones, and the spread between
machines that a comparison across machines must carry.

Every shard measures the same canary cell at its start and end. A machine's canary TPS is
the mean of those runs' steady seconds, with its interval; the spread between machines is
the variance of the log of their canary means, which a ratio of two figures measured on
different machines inherits twice (once from each side).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from statistics import median

import numpy as np

from oltplab.analysis.dataset import CanaryRun, Dataset
from oltplab.analysis.estimate import Estimate, PointSample, mean_estimate
from oltplab.base.stats import steady


@dataclass(frozen=True)
class MachineSpread:
    variance: float  # of the log of the machines' canary means
    machines: int

    @property
    def df(self) -> int:
        return self.machines - 1


@dataclass(frozen=True)
class MachineRow:
    machine: str
    cells: int  # measured cells
    canaries: tuple[CanaryRun, ...]
    canary: Estimate | None  # steady canary TPS, start and end together
    vs_median_pct: float | None
    slow: bool


def machine_rows(dataset: Dataset) -> list[MachineRow]:
    """One row per machine that measured cells or canaries."""
    canaries: dict[str, list[CanaryRun]] = defaultdict(list)
    for run in dataset.canaries:
        canaries[run.machine].append(run)
    cells: dict[str, int] = defaultdict(int)
    for cell in dataset.cells:
        if cell.measured and cell.machine:
            cells[cell.machine] += 1
    names = sorted(set(cells) | set(canaries))
    estimates = {}
    for name in names:
        parts = {i: steady(run.tps)[1] for i, run in enumerate(canaries[name], start=1)}
        usable = {i: p for i, p in parts.items() if len(p) >= 2}
        estimates[name] = mean_estimate(PointSample(usable)) if usable else None
    points = [e.point for e in estimates.values() if e is not None]
    middle = median(points) if points else None
    rows = []
    for name in names:
        found = estimates[name]
        versus = (found.point / middle - 1) * 100 if found is not None and middle else None
        slow = versus is not None and versus < -dataset.slow_machine_pct
        rows.append(MachineRow(name, cells[name], tuple(canaries[name]), found, versus, slow))
    return rows


def spread(rows: list[MachineRow]) -> MachineSpread | None:
    """The between-machine spread, from two or more machines' canaries; else None."""
    means = [row.canary.point for row in rows if row.canary is not None and row.canary.point > 0]
    if len(means) < 2:
        return None
    return MachineSpread(float(np.var(np.log(means), ddof=1)), len(means))


def log_variance_of_mean(sample: PointSample) -> float:
    """Var of the log of a point's mean: from its repetitions, else from its seconds."""
    if sample.reps >= 2:
        return float(np.log(sample.rep_means).var(ddof=1)) / sample.reps
    return sample.run_variance / sample.mean**2 if sample.mean else math.inf
