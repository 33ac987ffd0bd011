"""The adaptive stopping rule replayed on series already measured: where each cell would
have stopped, the machine time that saves, and which of the report's verdicts the shorter
cells would change, per workload class (scenario and tier), so that a user sees where early
stopping is safe on their own data before spending a cluster on it.

The rule runs as a live run would apply it: in each block (engine, scenario, tier,
threads) the first repetition to have run whole shows the block's horizon and keeps its
seconds, the later ones stop by the rule but not before that horizon, each judged on its
engine-state signals where its telemetry holds them. Replayed with `learn=False`, the rule
alone decides every cell (what stopping would change without the horizon).

Each cell is cut at its stop and its figures recomputed from what is left (the whole-run
TPS becomes the mean of the seconds kept), then the same analysis runs on both: a
progression row changes when its verdict or its direction does, a difference when it
enters or leaves the list beyond the threshold, a finding when it appears or goes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

from oltplab.analysis.dataset import CellRecord, Dataset
from oltplab.analysis.findings import Finding
from oltplab.analysis.model import Analysis, AnalysisOptions, analyse
from oltplab.analysis.tables import ProgressionRow
from oltplab.base.sizes import duration_text
from oltplab.base.stationarity import Capacities, state_signals
from oltplab.base.stats import Series, mser5_cut
from oltplab.base.stopping_rule import (
    Horizon,
    Stop,
    StopRule,
    block_horizon,
    stop_point,
)


@dataclass(frozen=True)
class ReplayedCell:
    cell: CellRecord
    measured_seconds: int  # as recorded
    stop: Stop
    moved_pct: float = 0.0  # how far stopping moved its steady mean, % of the whole one

    @property
    def workload_class(self) -> str:
        return f"{self.cell.scenario} {self.cell.tier}"


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
    workload_class: str = ""  # scenario and tier


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
class ClassTotals:
    """One workload class (scenario and tier) of a replay."""

    name: str
    cells: int
    learning: int  # cells that ran whole to show their block's horizon
    measured_seconds: int
    kept_seconds: int
    unsettled: int
    changed: int  # verdicts changed beyond the rule's resolution
    within: int  # verdicts changed closer to their line than the resolution
    largest_move_pct: float  # the most any cell's steady mean moved

    @property
    def saved_share(self) -> float:
        return 1 - self.kept_seconds / self.measured_seconds if self.measured_seconds else 0.0


@dataclass(frozen=True)
class Replay:
    rule: StopRule
    cells: list[ReplayedCell]
    changes: list[VerdictChange]
    warm_ups: WarmUps = WarmUps(0, 0, 0)
    learn: bool = True  # the horizon learned per block; else the rule alone decided
    # The verdicts the whole-length analysis gave that a shorter cell could change: none
    # where nothing is compared (one engine), and then "no change" says nothing.
    judged: int = 0

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

    @property
    def learning(self) -> int:
        return sum(_learning(c) for c in self.cells)

    @property
    def later_share(self) -> float | None:
        """The share of their seconds the cells after each block's first kept: what a
        repetition that stops early is expected to run. None when every block ran once."""
        later = [c for c in self.cells if not _learning(c)]
        measured = sum(c.measured_seconds for c in later)
        return sum(c.stop.seconds for c in later) / measured if measured else None

    def later_shares(self) -> dict[str, float]:
        """Per workload class, the share of their seconds the cells after each block's
        first kept (classes with none are left out)."""
        found: dict[str, tuple[int, int]] = {}
        for cell in self.cells:
            if not _learning(cell):
                kept, measured = found.get(cell.workload_class, (0, 0))
                found[cell.workload_class] = (
                    kept + cell.stop.seconds,
                    measured + cell.measured_seconds,
                )
        return {name: kept / measured for name, (kept, measured) in found.items() if measured}

    def classes(self) -> list[ClassTotals]:
        names = list(dict.fromkeys(c.workload_class for c in self.cells))
        totals = []
        for name in names:
            mine = [c for c in self.cells if c.workload_class == name]
            changes = [c for c in self.changes if c.workload_class == name]
            totals.append(
                ClassTotals(
                    name,
                    len(mine),
                    sum(_learning(c) for c in mine),
                    sum(c.measured_seconds for c in mine),
                    sum(c.stop.seconds for c in mine),
                    sum(not c.stop.settled for c in mine),
                    sum(c.beyond_resolution for c in changes),
                    sum(not c.beyond_resolution for c in changes),
                    max(abs(c.moved_pct) for c in mine),
                )
            )
        return totals

    def summary_rows(self) -> list[tuple[str, ...]]:
        """Per workload class, and last of all cells: cells, the share of seconds saved,
        unsettled cells, verdicts changed (and within the resolution), the largest move."""
        rows = [
            (
                totals.name,
                str(totals.cells),
                f"{100 * totals.saved_share:.0f}%",
                str(totals.unsettled),
                f"{totals.changed}" + (f" (+{totals.within} within)" if totals.within else ""),
                f"{totals.largest_move_pct:.1f}%",
            )
            for totals in self.classes()
        ]
        return [
            *rows,
            (
                "all cells",
                str(len(self.cells)),
                f"{100 * self.saved_share:.0f}%",
                str(self.unsettled),
                str(sum(c.beyond_resolution for c in self.changes)),
                f"{max(abs(c.moved_pct) for c in self.cells):.1f}%",
            ),
        ]

    def seconds_said(self) -> list[str]:
        """The seconds measured and kept, of cells and of warm-ups, and where the horizon
        was learned, what ran whole to learn it."""
        said = [
            f"cells: {duration_text(self.measured_seconds)} measured, "
            f"{duration_text(self.kept_seconds)} with the rule"
        ]
        warm = self.warm_ups
        if warm.count:
            said.append(
                f"warm-ups: {warm.count}, {duration_text(warm.measured_seconds)} measured, "
                f"{duration_text(warm.kept_seconds)} with the rule "
                f"({100 * (1 - warm.kept_seconds / max(1, warm.measured_seconds)):.0f}% saved)"
            )
        if self.learn and self.later_share is None:
            said.append(
                "Every block here ran once: each cell is the first of its block and runs "
                "whole, so nothing is saved. Repetitions stop early once their block has run "
                "whole once (replay with --horizon none to see what the rule alone would "
                "change)."
            )
        elif self.learn:
            said.append(
                f"{self.learning} cell(s) ran whole as the first of their block; the others "
                f"kept {self.later_share:.0%} of their seconds."
            )
        return said

    def as_json(self) -> dict[str, object]:
        later = self.later_share
        return {
            "rule": asdict(self.rule),
            "horizon": "learned per block" if self.learn else "none: the rule alone",
            "cells": len(self.cells),
            "measured_seconds": self.measured_seconds,
            "kept_seconds": self.kept_seconds,
            "saved_share": round(self.saved_share, 4),
            "unsettled": self.unsettled,
            "learning": self.learning,
            "later_kept_share": None if later is None else round(later, 4),
            "classes": [
                {**asdict(c), "saved_share": round(c.saved_share, 4)} for c in self.classes()
            ],
            "verdicts_judged": self.judged,
            "changes": [asdict(change) for change in self.changes],
            "warm_ups": asdict(self.warm_ups),
        }


def _learning(cell: ReplayedCell) -> bool:
    return cell.stop.horizon is not None and cell.stop.horizon.learning


def _block(cell: CellRecord) -> tuple[object, ...]:
    """What repetitions repeat: the cell in its results, without its repetition."""
    results = cell.key.split("|", 1)[0]
    return (results, cell.machine, cell.engine, cell.scenario, cell.tier, cell.threads)


def _moved_pct(series: np.ndarray, seconds: int) -> float:
    """How far a cell's steady mean at `seconds` lies from its whole-length one, in %."""
    whole = series[mser5_cut(series) :].mean()
    part = series[:seconds]
    kept = part[mser5_cut(part) :].mean()
    return float(100 * (kept / whole - 1)) if whole else 0.0


def stops(dataset: Dataset, rule: StopRule, learn: bool = True) -> list[ReplayedCell]:
    """Every measured cell with a per-second series, and where the rule stops it."""
    measured = [
        cell
        for cell in dataset.cells
        if len(dataset.series.get(cell.key, ())) > 0 and cell.status == "done"
    ]
    horizons: dict[str, Horizon | None] = {}
    blocks: dict[tuple[object, ...], list[CellRecord]] = {}
    for cell in measured:
        blocks.setdefault(_block(cell), []).append(cell)
    for block in blocks.values():
        # As a run sees them: each cell after those its block measured before it.
        ran = sorted(block, key=lambda c: (c.started_at or "~", c.repetition))
        ran_series = [dataset.series[c.key] for c in ran]
        # Imported or fixed-length cells all ran whole; of an adaptive run, those not stopped.
        planned = min(rule.max_seconds, max(len(s) for s in ran_series))
        for position, cell in enumerate(ran):
            before = ran_series[:position]
            horizons[cell.key] = block_horizon(before, planned, rule) if learn else None
    replayed = []
    for cell in measured:
        series = dataset.series[cell.key]
        variables = dataset.variables.get((cell.engine, cell.tier), {})
        signals = state_signals(
            dataset.telemetry.get(cell.key, {}), len(series), Capacities.of(variables)
        )
        stop = stop_point(series, rule, horizons[cell.key], signals)
        replayed.append(ReplayedCell(cell, len(series), stop, _moved_pct(series, stop.seconds)))
    return replayed


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


def _class(row: ProgressionRow | Finding) -> str:
    return f"{row.scenario} {row.tier}"


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
            changes.append(
                VerdictChange("progression", _row_name(row), was, now, clear, _class(row))
            )
    listed = {_row_name(r) for r in before.differences}
    listed_after = {_row_name(r) for r in after.differences}
    classes = {_row_name(r): _class(r) for r in [*before.progression, *after.progression]}
    threshold = before.options.threshold
    for name in sorted(listed ^ listed_after):
        beyond = f"beyond {threshold:g}%"
        was, now = (beyond, "not listed") if name in listed else ("not listed", beyond)
        clear = abs(abs(shown[name]) - threshold) > resolution
        changes.append(VerdictChange("difference", name, was, now, clear, classes[name]))
    decided = {_finding_name(f): f for f in before.findings}
    decided_after = {_finding_name(f): f for f in after.findings}
    for name in sorted(set(decided) ^ set(decided_after)):
        finding = decided.get(name) or decided_after[name]
        was, now = ("found", "gone") if name in decided else ("none", "found")
        clear = finding.margin_pct is None or finding.margin_pct > resolution
        changes.append(VerdictChange("finding", name, was, now, clear, _class(finding)))
    return changes


def replay(
    dataset: Dataset,
    rule: StopRule,
    options: AnalysisOptions,
    warm_ups: Sequence[Series],
    learn: bool = True,
) -> Replay:
    replayed = stops(dataset, rule, learn)
    before = analyse(dataset, options)
    after = analyse(shortened(dataset, replayed), options)
    resolution = rule.target_ci_pct * 2**0.5
    changes = verdict_changes(before, after, resolution)
    judged = len(before.progression) + len(before.differences) + len(before.findings)
    return Replay(rule, replayed, changes, replay_warm_ups(warm_ups, rule), learn, judged)
