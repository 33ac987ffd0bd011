"""What `oltplab replay` reads and writes: the stopping rule the recorded run was given
(unless the command line asks for another), replayed on its cells and warm-ups, each
cell's stop in replay.csv and the totals and verdict changes in replay.json."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from oltplab.analysis.dataset import Dataset, load
from oltplab.analysis.model import AnalysisOptions
from oltplab.analysis.rule_replay import Replay, ReplayedCell, replay
from oltplab.base.errors import OltplabError
from oltplab.base.stopping_rule import StopRule
from oltplab.importers.naming import is_warm_up
from oltplab.report.export import to_csv
from oltplab.spec import ProtocolSpec
from oltplab.store.directory import REPLAY_CSV, REPLAY_JSON, SYSBENCH_OUTPUT, check_results
from oltplab.store.files import write_whole
from oltplab.store.outputs import check_replaceable
from oltplab.sysbench.reading import read_output

REPLAY_COLUMNS = ["cell", "engine", "scenario", "tier", "threads", "repetition", "measured_s",
                  "stopped_s", "settled", "ci_pct", "warm_up_cut_s", "mean_moved_pct",
                  "ran_whole_to_learn", "note"]  # fmt: skip
REPLAY_JSON_START = b'{\n  "rule": '  # as found.as_json() begins

# The rule's settings where neither the options nor the recorded spec give them: the
# spec's own defaults (ProtocolSpec.stop_target_pct, stop_min_seconds).
DEFAULT_TARGET_PCT = ProtocolSpec.model_fields["stop_target_pct"].default
DEFAULT_MIN_SECONDS = ProtocolSpec.model_fields["stop_min_seconds"].default


@dataclass(frozen=True)
class RuleReplayInput:
    results: tuple[Path, ...]
    dataset: Dataset
    rule: StopRule
    csv_file: Path
    json_file: Path


def replay_input(
    results: list[Path],
    output: Path | None,
    target_pct: float | None,
    min_seconds: int | None,
    max_seconds: int | None,
) -> RuleReplayInput:
    """The results loaded, the files the replay will replace (in `output`, else the first
    results) checked, and the rule the run was given unless the options ask for another."""
    for given in results:
        check_results(given)
    folder = output or results[0]
    csv_file, json_file = folder / REPLAY_CSV, folder / REPLAY_JSON
    check_replaceable(csv_file, ",".join(REPLAY_COLUMNS).encode(), REPLAY_CSV)
    check_replaceable(json_file, REPLAY_JSON_START, REPLAY_JSON)
    dataset = load(results)
    rule = StopRule(
        target_pct or dataset.stop_target_pct or DEFAULT_TARGET_PCT,
        min_seconds or dataset.stop_min_seconds or DEFAULT_MIN_SECONDS,
        max_seconds or 10**9,
    )
    return RuleReplayInput(tuple(results), dataset, rule, csv_file, json_file)


def _row(replayed: ReplayedCell) -> dict[str, object]:
    cell, stop = replayed.cell, replayed.stop
    return dict(zip(REPLAY_COLUMNS, (
        cell.key, cell.engine, cell.scenario, cell.tier, cell.threads, cell.repetition,
        replayed.measured_seconds, stop.seconds, "yes" if stop.settled else "no",
        None if stop.ci_pct is None else round(stop.ci_pct, 2), stop.cut,
        round(replayed.moved_pct, 2), "yes" if stop.horizon and stop.horizon.learning else "no",
        stop.describe(),
    ), strict=True))  # fmt: skip


def replay_written(given: RuleReplayInput, margin_pct: float, learn: bool) -> Replay:
    """The rule replayed on the cells, and on the warm-ups oltplab kept beside them (they
    end by the rule too), written to replay.csv and replay.json."""
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
