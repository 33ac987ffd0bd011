"""The adaptive stopping rule replayed on series already measured: where each cell would
have stopped, the machine time that saves, and which of the report's verdicts the shorter
cells would change. A user trusts the rule on their own data before spending a cluster on it.

Each cell is cut at its stop and its figures recomputed from what is left (the whole-run
TPS becomes the mean of the seconds kept), then the same analysis runs on both: a
progression row changes when its verdict or its direction does, a difference when it
enters or leaves the list beyond the threshold, a finding when it appears or goes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

from oltplab.analysis.dataset import CellRecord, Dataset
from oltplab.analysis.findings import Finding
from oltplab.analysis.model import Analysis, AnalysisOptions, analyse
from oltplab.analysis.tables import ProgressionRow
from oltplab.base.stats import Series
from oltplab.base.stopping import Stop, StopRule, stop_point


@dataclass(frozen=True)
class ReplayedCell:
    cell: CellRecord
    measured_seconds: int  # as recorded
    stop: Stop


@dataclass(frozen=True)
class VerdictChange:
    what: str  # progression, difference or finding
    subject: str  # the row or finding, as the report names it
    before: str
    after: str
    # Whether the whole cells decided it by more than the rule's resolution: cells each
    # known to +-target tell their difference to about +-target x sqrt(2), so a change
    # closer than that to the line it crossed is one the rule was never asked to keep.
    beyond_resolution: bool = True


@dataclass(frozen=True)
class WarmUps:
    """Warm-up outputs replayed: each ends by the rule too, its own length the most."""

    count: int
    measured_seconds: int
    kept_seconds: int


def replay_warm_ups(series: Sequence[Series], rule: StopRule) -> WarmUps:
    kept = [
        stop_point(values, StopRule(rule.target_ci_pct, min(rule.min_seconds, n), n)).seconds
        for values in series
        if (n := len(values)) > 0
    ]
    return WarmUps(len(kept), sum(len(values) for values in series), sum(kept))


@dataclass(frozen=True)
class Replay:
    rule: StopRule
    cells: list[ReplayedCell]
    changes: list[VerdictChange]
    warm_ups: WarmUps = WarmUps(0, 0, 0)

    @property
    def measured_seconds(self) -> int:
        return sum(c.measured_seconds for c in self.cells)

    @property
    def kept_seconds(self) -> int:
        return sum(c.stop.seconds for c in self.cells)

    @property
    def saved_share(self) -> float:
        return 1 - self.kept_seconds / self.measured_seconds if self.measured_seconds else 0.0

    @property
    def unsettled(self) -> int:
        return sum(not c.stop.settled for c in self.cells)

    def as_json(self) -> dict[str, object]:
        return {
            "rule": asdict(self.rule),
            "cells": len(self.cells),
            "measured_seconds": self.measured_seconds,
            "kept_seconds": self.kept_seconds,
            "saved_share": round(self.saved_share, 4),
            "unsettled": self.unsettled,
            "changes": [asdict(change) for change in self.changes],
            "warm_ups": asdict(self.warm_ups),
        }


def stops(dataset: Dataset, rule: StopRule) -> list[ReplayedCell]:
    """Every measured cell with a per-second series, and where the rule stops it."""
    return [
        ReplayedCell(cell, len(series), stop_point(series, rule))
        for cell in dataset.cells
        if len(series := dataset.series.get(cell.key, ())) > 0 and cell.status == "done"
    ]


def shortened(dataset: Dataset, replayed: list[ReplayedCell]) -> Dataset:
    """The dataset as the rule would have measured it."""
    cut = {r.cell.key: r.stop.seconds for r in replayed}
    series = {key: values[: cut.get(key, len(values))] for key, values in dataset.series.items()}
    cells = []
    for cell in dataset.cells:
        if cell.key not in cut or cut[cell.key] >= len(dataset.series[cell.key]):
            cells.append(cell)
            continue
        kept = series[cell.key]
        tps = float(kept.mean())
        # Queries scale with transactions; latency and errors of the seconds left are not
        # known apart from the whole run's, so they stay as recorded.
        ratio = tps / cell.tps if cell.tps else None
        qps = cell.qps * ratio if cell.qps is not None and ratio is not None else cell.qps
        cells.append(replace(cell, tps=tps, qps=qps, duration_s=float(len(kept))))
    return replace(dataset, cells=cells, series=series, memo={})


def _progression_verdict(row: ProgressionRow) -> str:
    if row.change is None:
        return f"{row.whole_run_diff_pct:+.1f}% (whole run)"
    direction = "faster" if row.change.diff_pct > 0 else "slower"
    judged = direction if row.change.verdict == "significant" else "not significant"
    return f"{judged}: {row.change.with_interval()}"


def _row_name(row: ProgressionRow) -> str:
    return f"{row.scenario} {row.tier} {row.engine} vs {row.baseline_engine} {row.threads}t"


def _finding_name(finding: Finding) -> str:
    return f"{finding.kind}: {finding.scenario} {finding.tier} {finding.engine}"


def verdict_changes(before: Analysis, after: Analysis, resolution: float) -> list[VerdictChange]:
    changes = []
    shown = {_row_name(r): r.shown_diff_pct for r in before.progression}
    later = {_row_name(r): r for r in after.progression}
    for row in before.progression:
        other = later.get(_row_name(row))
        if other is None:
            continue
        was, now = _progression_verdict(row), _progression_verdict(other)
        if was.split(":")[0] != now.split(":")[0]:
            clear = abs(row.shown_diff_pct) > resolution
            changes.append(VerdictChange("progression", _row_name(row), was, now, clear))
    listed = {_row_name(r) for r in before.differences}
    listed_after = {_row_name(r) for r in after.differences}
    threshold = before.options.threshold
    for name in sorted(listed ^ listed_after):
        beyond = f"beyond {threshold:g}%"
        was, now = (beyond, "not listed") if name in listed else ("not listed", beyond)
        clear = abs(abs(shown[name]) - threshold) > resolution
        changes.append(VerdictChange("difference", name, was, now, clear))
    decided = {_finding_name(f): f for f in before.findings}
    decided_after = {_finding_name(f): f for f in after.findings}
    for name in sorted(set(decided) ^ set(decided_after)):
        finding = decided.get(name) or decided_after[name]
        was, now = ("found", "gone") if name in decided else ("none", "found")
        clear = finding.margin_pct is None or finding.margin_pct > resolution
        changes.append(VerdictChange("finding", name, was, now, clear))
    return changes


def replay(
    dataset: Dataset, rule: StopRule, options: AnalysisOptions, warm_ups: Sequence[Series]
) -> Replay:
    replayed = stops(dataset, rule)
    before = analyse(dataset, options)
    after = analyse(shortened(dataset, replayed), options)
    resolution = rule.target_ci_pct * 2**0.5
    changes = verdict_changes(before, after, resolution)
    return Replay(rule, replayed, changes, replay_warm_ups(warm_ups, rule))
