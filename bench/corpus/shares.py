"""The adaptive stopping rule replayed on the long-cell corpus: per workload class, the
seconds it keeps and the verdicts it changes, with the horizon learned per block (as runs
stop cells) and with the rule alone, side by side in one run. Writes what `oltplab plan`
assumes without a replay of its own: src/oltplab/plan/corpus_shares.json.

Nothing in the rule is tuned here: its constants are set a priori (base/stopping_rule.py,
base/stationarity.py). The horizon is learned on each block's first repetition and judged
on its later ones, which the learning never sees. Where the corpus holds a block only once,
its later repetitions are estimated by the cell itself as a later one (its own horizon):
in-sample, said so in the basis, and replaced once the corpus has second repetitions.

    python3 bench/corpus/shares.py [RESULTS]   (default: bench/corpus/long-cells, unpacked
                                                from long-cells.tar.xz when absent)
"""

from __future__ import annotations

import json
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "src"))

from oltplab.analysis.dataset import Dataset, load  # noqa: E402
from oltplab.analysis.model import AnalysisOptions  # noqa: E402
from oltplab.analysis.rule_replay import Replay, replay, replay_warm_ups  # noqa: E402
from oltplab.base.stationarity import Capacities, state_signals  # noqa: E402
from oltplab.base.stopping_rule import Horizon, StopRule, learned_horizon, stop_point  # noqa: E402
from oltplab.importers.naming import is_warm_up  # noqa: E402
from oltplab.plan.lengths import CORPUS_FILE  # noqa: E402
from oltplab.sysbench.reading import read_output  # noqa: E402

TARGET_PCT = 2.0
MIN_SECONDS = 60
THRESHOLD_PCT = 5.0


def results_folder(given: list[str]) -> Path:
    if given:
        return Path(given[0])
    folder = HERE / "long-cells"
    if not folder.is_dir():
        folder = Path(tempfile.mkdtemp(prefix="oltplab-corpus-"))
        with tarfile.open(HERE / "long-cells.tar.xz") as packed:
            packed.extractall(folder, filter="data")
    return folder


def own_horizon_shares(dataset: Dataset, rule: StopRule) -> dict[str, float]:
    """Per workload class, the share of their seconds the cells keep, each replayed as a
    later repetition of a block whose first ran as it did."""
    found: dict[str, tuple[int, int]] = {}
    for cell in dataset.cells:
        series = dataset.series.get(cell.key)
        if series is None or not len(series) or cell.status != "done":
            continue
        variables = dataset.variables.get((cell.engine, cell.tier), {})
        signals = state_signals(
            dataset.telemetry.get(cell.key, {}), len(series), Capacities.of(variables)
        )
        stop = stop_point(series, rule, Horizon(learned_horizon(series, rule)), signals)
        name = f"{cell.scenario} {cell.tier}"
        kept, measured = found.get(name, (0, 0))
        found[name] = (kept + stop.seconds, measured + len(series))
    return {name: kept / measured for name, (kept, measured) in found.items()}


def print_replay(title: str, found: Replay) -> None:
    print(
        f"\n{title}: {len(found.cells)} cells, saved {found.saved_share:.0%}, "
        f"{found.judged} verdicts to change"
    )
    print(f"  {'class':<22} {'cells':>5} {'saved':>6} {'unsettled':>9} {'changed':>7} {'moved':>7}")
    for c in found.classes():
        print(
            f"  {c.name:<22} {c.cells:>5} {c.saved_share:>6.0%} {c.unsettled:>9} "
            f"{c.changed:>7} {c.largest_move_pct:>6.1f}%"
        )
    for change in found.changes:
        if change.beyond_resolution:
            print(f"  changed: {change.what} {change.subject}: {change.before} -> {change.after}")


def main() -> None:
    results = results_folder(sys.argv[1:])
    dataset = load([results])
    rule = StopRule(TARGET_PCT, MIN_SECONDS, 10**9)
    options = AnalysisOptions([], THRESHOLD_PCT)
    outputs = sorted(p for p in results.rglob("*.sysbench.txt") if is_warm_up(p.name))
    warm_ups = [read_output(p).tps for p in outputs]
    # A looser target beside, for scale: what the rule would do where cells settle.
    for looser in (2 * TARGET_PCT, 5 * TARGET_PCT / 2):
        wide = StopRule(looser, MIN_SECONDS, 10**9)
        print_replay(f"at +-{looser:g}%, the rule alone", replay(dataset, wide, options, [], False))
        print_replay(f"at +-{looser:g}%, horizon learned", replay(dataset, wide, options, [], True))
    alone = replay(dataset, rule, options, warm_ups, learn=False)
    learned = replay(dataset, rule, options, warm_ups, learn=True)
    print_replay(f"at +-{TARGET_PCT:g}%, the rule alone (no horizon)", alone)
    print_replay(f"at +-{TARGET_PCT:g}%, horizon learned per block (as runs stop cells)", learned)
    shares = learned.later_shares()
    method = "later repetitions replayed, each block's horizon learned on its first"
    if not shares:
        shares = own_horizon_shares(dataset, rule)
        method = (
            "each block measured once there, so each cell replayed as a later repetition of "
            "a block whose first ran as it did: in-sample"
        )
    print(f"\nlater repetitions ({method}):")
    for name, share in shares.items():
        print(f"  {name:<22} kept {share:.0%}")
    conservative = max(shares, key=lambda name: shares[name])
    warm = replay_warm_ups(warm_ups, rule)
    warm_share = warm.kept_seconds / warm.measured_seconds if warm.measured_seconds else 1.0
    engines = sorted({c.engine for c in dataset.cells})
    seconds = sorted({len(s) for s in dataset.series.values()})
    written = {
        "source": (
            f"the long-cell corpus (bench/corpus: {len(learned.cells)} cells of up to "
            f"{seconds[-1]} s, {', '.join(engines)}, on a 2-core VM)"
        ),
        "method": method,
        "target_pct": TARGET_PCT,
        "later_kept_share": round(shares[conservative], 4),
        "most_conservative_class": conservative,
        "warm_up_kept_share": round(warm_share, 4),
        "verdicts_judged": learned.judged,
        "changes": [
            {k: getattr(c, k) for k in ("what", "subject", "before", "after")}
            for c in learned.changes
            if c.beyond_resolution
        ],
        "classes": {name: round(share, 4) for name, share in shares.items()},
        "largest_mean_move_pct": round(float(np.max([abs(c.moved_pct) for c in learned.cells])), 2),
    }
    CORPUS_FILE.write_text(json.dumps(written, indent=2) + "\n")
    print(f"\nwritten: {CORPUS_FILE.relative_to(ROOT)}; next: oltplab plan SPEC --stop adaptive")


if __name__ == "__main__":
    main()
