"""What `oltplab replay` asks for, reads and writes, and what it tells: the stopping rule the
recorded run was given (unless the command line asks for another), replayed on its cells
and warm-ups, each cell's stop in replay.csv and the totals and verdict changes in
replay.json, what the shorter cells would save and which verdicts they would change."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from oltplab.analysis.dataset import Dataset, load
from oltplab.base.asking import (
    MARGIN,
    RESOLUTION,
    WEEK_SECONDS,
    argument,
    margin_option,
    option,
    output_option,
    resolution_option,
)
from oltplab.base.errors import OltplabError
from oltplab.base.given import parse_percent
from oltplab.base.stopping_rule import StopRule
from oltplab.base.telling import Rows, Said, Told
from oltplab.importers.naming import is_warm_up
from oltplab.spec import ProtocolSpec
from oltplab.store.directory import REPLAY_CSV, REPLAY_JSON, SYSBENCH_OUTPUT, check_results
from oltplab.store.files import write_whole
from oltplab.store.outputs import check_replaceable
from oltplab.sysbench.reading import read_output

if TYPE_CHECKING:  # the replay loads SciPy, which --help never needs
    from oltplab.analysis.rule_replay import Replay, ReplayedCell

REPLAY_COLUMNS = ["cell", "engine", "scenario", "tier", "threads", "repetition", "measured_s",
                  "stopped_s", "settled", "ci_pct", "warm_up_cut_s", "mean_moved_pct",
                  "ran_whole_to_learn", "note"]  # fmt: skip
REPLAY_JSON_START = b'{\n  "rule": '  # as found.as_json() begins

# The rule's settings where neither the options nor the recorded spec give them: the
# spec's own defaults (ProtocolSpec.stop_target_pct, stop_min_seconds).
DEFAULT_TARGET_PCT = ProtocolSpec.model_fields["stop_target_pct"].default
DEFAULT_MIN_SECONDS = ProtocolSpec.model_fields["stop_min_seconds"].default


class StopRuleName(StrEnum):
    adaptive = "adaptive"


class HorizonName(StrEnum):
    learned = "learned"
    none = "none"


@dataclass(frozen=True, kw_only=True)
class ReplayAsked:
    results: list[Path] = argument("Results directories or imported trees.", "RESULTS")
    stop: StopRuleName = option(
        StopRuleName.adaptive, "The stopping rule to replay on the recorded seconds."
    )
    resolution: str | None = resolution_option(
        "stop a cell once its steady mean's 95% interval is within ±PCT (default: the spec's "
        "stop_target_pct, else 2%)."
    )
    min_seconds: int | None = option(
        None,
        "Never stop a cell before this many seconds, nor on a shorter steady part (default: "
        "the spec's stop_min_seconds, else 60).",
        min=10,
        max=WEEK_SECONDS,
    )
    max_seconds: int | None = option(
        None, "Stop every cell here at the latest (default: its length).", min=10, max=WEEK_SECONDS
    )
    horizon: HorizonName = option(
        HorizonName.learned,
        "learned: as a run stops cells, the first repetition of each block whole and the "
        "others not before the horizon it showed; none: the rule alone stops every cell (what "
        "trusting it without the horizon would change).",
    )
    margin: str = margin_option("list differences beyond ±PCT.", "5%")
    output: Path | None = output_option("Where replay.csv goes (default: FIRST_RESULTS).")

    def replayed(self) -> Told:
        """The rule replayed, its files written, and what it would save and change."""
        target = None if self.resolution is None else parse_percent(self.resolution, RESOLUTION)
        margin = parse_percent(self.margin, MARGIN)
        prepared = _replay_input(self, target)
        found = _replay_written(prepared, margin, self.horizon == HorizonName.learned)
        rule = prepared.rule
        said: list[Said] = [
            f"The {self.stop} rule: a cell stops once its steady mean is known to "
            f"±{rule.target_ci_pct:g}% (95%), not before {rule.min_seconds} s",
            _summary(found, self.stop),
            *found.seconds_said(),
            *_changes(found),
            f"Per cell: {prepared.csv_file}; totals and changes: {prepared.json_file}",
        ]
        return Told(
            tuple(said),
            "compare the verdicts above with your report before letting cells stop early; "
            f"oltplab plan SPEC --stop adaptive --from {prepared.csv_file.parent} (it estimates "
            "a matrix with these shares)",
        )


def _summary(found: Replay, stop: str) -> Rows:
    learned = "horizon learned per block" if found.learn else "the rule alone"
    columns = ("workload class", "cells", "saved", "unsettled", "verdicts changed",
               "largest mean move")  # fmt: skip
    return Rows(
        f"The {stop} rule at {found.rule.target_ci_pct:g}%, replayed ({learned})",
        columns,
        tuple(found.summary_rows()),
        right=columns[1:],
        last_bold=True,
    )


def _changes(found: Replay) -> list[Said]:
    """The verdicts the shorter cells change, and how many more changed within the rule's
    resolution."""
    clear = [c for c in found.changes if c.beyond_resolution]
    said: list[Said] = [
        Rows(
            f"{len(clear)} verdict(s) the shorter cells change",
            ("what", "row or finding", "as measured", "with the rule"),
            tuple((c.what, c.subject, c.before, c.after) for c in clear),
        )
        if clear
        else "No verdict changes beyond the rule's resolution."
    ]
    if close := len(found.changes) - len(clear):
        target = found.rule.target_ci_pct
        said.append(
            f"{close} more within ±{target * 2**0.5:.1f}% of the line they crossed: closer "
            f"than cells known to ±{target:g}% tell apart (a finer --resolution keeps them)."
        )
    return said


@dataclass(frozen=True)
class RuleReplayInput:
    results: tuple[Path, ...]
    dataset: Dataset
    rule: StopRule
    csv_file: Path
    json_file: Path


def _replay_input(given: ReplayAsked, target_pct: float | None) -> RuleReplayInput:
    """The results loaded, the files the replay will replace (in --output, else the first
    results) checked, and the rule the run was given unless the options ask for another."""
    for results in given.results:
        check_results(results)
    folder = given.output or given.results[0]
    csv_file, json_file = folder / REPLAY_CSV, folder / REPLAY_JSON
    check_replaceable(csv_file, ",".join(REPLAY_COLUMNS).encode(), REPLAY_CSV)
    check_replaceable(json_file, REPLAY_JSON_START, REPLAY_JSON)
    dataset = load(given.results)
    rule = StopRule(
        target_pct or dataset.stop_target_pct or DEFAULT_TARGET_PCT,
        given.min_seconds or dataset.stop_min_seconds or DEFAULT_MIN_SECONDS,
        given.max_seconds or 10**9,
    )
    return RuleReplayInput(tuple(given.results), dataset, rule, csv_file, json_file)


def _row(replayed: ReplayedCell) -> dict[str, object]:
    cell, stop = replayed.cell, replayed.stop
    return dict(zip(REPLAY_COLUMNS, (
        cell.key, cell.engine, cell.scenario, cell.tier, cell.threads, cell.repetition,
        replayed.measured_seconds, stop.seconds, "yes" if stop.settled else "no",
        None if stop.ci_pct is None else round(stop.ci_pct, 2), stop.cut,
        round(replayed.moved_pct, 2), "yes" if stop.horizon and stop.horizon.learning else "no",
        stop.describe(),
    ), strict=True))  # fmt: skip


def _replay_written(given: RuleReplayInput, margin_pct: float, learn: bool) -> Replay:
    """The rule replayed on the cells, and on the warm-ups oltplab kept beside them (they
    end by the rule too), written to replay.csv and replay.json."""
    from oltplab.analysis.model import AnalysisOptions
    from oltplab.analysis.rule_replay import replay
    from oltplab.report.export import to_csv

    outputs = sorted(
        p for r in given.results for p in r.rglob(f"*{SYSBENCH_OUTPUT}") if is_warm_up(p.name)
    )
    warm_ups = [read_output(path).tps for path in outputs if path.is_file()]
    options = AnalysisOptions([], margin_pct)
    found = replay(given.dataset, given.rule, options, warm_ups, learn)
    if not found.cells:
        raise OltplabError(f"{given.results[0]}: no cell has per-second samples to replay")
    # replay.json last: `plan --from` reads it, so it comes in once replay.csv has.
    write_whole(
        {
            given.csv_file: to_csv([_row(c) for c in found.cells], tuple(REPLAY_COLUMNS)).encode(),
            given.json_file: (json.dumps(found.as_json(), indent=2) + "\n").encode(),
        }
    )
    return found
