"""The stopping rule on real long cells: the corpus recorded on this machine (bench/corpus),
900 s cells with engine telemetry. Nothing in the rule was tuned on it; each block's horizon
is learned on its first repetition and the rule is judged on the later ones, which the
learning never sees."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from oltplab.analysis.dataset import Dataset, load
from oltplab.analysis.model import AnalysisOptions
from oltplab.analysis.rule_replay import Replay, replay
from oltplab.base.stopping_rule import StopRule
from oltplab.plan.lengths import CORPUS_FILE

CORPUS = Path(__file__).parents[2] / "bench" / "corpus" / "long-cells.tar.xz"
RULE = StopRule(target_ci_pct=2.0, min_seconds=60, max_seconds=10**9)


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Dataset, Replay]:
    """The corpus and the rule replayed on it, once: both tests read them."""
    folder = tmp_path_factory.mktemp("corpus")
    with tarfile.open(CORPUS) as packed:
        packed.extractall(folder, filter="data")
    dataset = load([folder])
    return dataset, replay(dataset, RULE, AnalysisOptions([], 5.0), [], learn=True)


def test_held_out_repetitions_keep_their_means_and_no_verdict_changes(
    replayed: tuple[Dataset, Replay],
) -> None:
    dataset, found = replayed
    later = [c for c in found.cells if not (c.stop.horizon and c.stop.horizon.learning)]
    assert later, "the corpus holds no block measured twice yet"
    # Each held-out repetition's steady mean where it stopped lies within the target of
    # its own whole-length mean: half for the learned drift, half for its own noise.
    moved = {c.cell.key: round(c.moved_pct, 2) for c in later}
    assert all(abs(m) <= RULE.target_ci_pct for m in moved.values()), moved
    assert [c for c in found.changes if c.beyond_resolution] == []
    # Every cell was judged on its engine's state: the corpus has the probe's telemetry.
    assert all(dataset.telemetry.get(c.cell.key) for c in found.cells)


def test_the_share_plan_assumes_is_the_corpus_replay_of_today(
    replayed: tuple[Dataset, Replay],
) -> None:
    """corpus_shares.json is what bench/corpus/shares.py writes from this corpus: not a
    number left over from an older corpus or another rule."""
    written = json.loads(CORPUS_FILE.read_text())
    _, found = replayed
    assert f"{len(found.cells)} cells" in written["source"], written["source"]
    shares = {name: round(share, 4) for name, share in found.later_shares().items()}
    assert written["classes"] == shares
    assert written["later_kept_share"] == max(shares.values())
