"""How long adaptive cells and warm-ups are expected to run, for estimates made before
they run. In each block the first repetition runs whole (it shows the block's horizon, see
base/stopping_rule.py) and the later ones keep a share of their seconds: the share `oltplab
replay` found on an earlier run (--from), else the most conservative share of any workload
class of the project's own long-cell corpus (bench/corpus), said to be an assumption. Either
way the verdicts that share's replay changed are said with it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oltplab.base.errors import OltplabError
from oltplab.base.nesting import load_json
from oltplab.base.stopping_rule import StopRule
from oltplab.spec import Spec

ONE_REPETITION = (
    "one repetition: every cell is the first of its block and runs whole, so adaptive cells "
    "save nothing; 2 repetitions or more let the later ones stop early"
)
# Written by bench/corpus/shares.py from the corpus it replays.
CORPUS_FILE = Path(__file__).with_name("corpus_shares.json")


@dataclass(frozen=True)
class ExpectedLengths:
    later_share: float  # of measure_seconds, kept by a repetition after its block's first
    warm_up_share: float  # of warmup_*_seconds
    basis: str  # where the shares come from, in words
    changes: tuple[str, ...] = ()  # the verdicts its replay changed beyond resolution
    judged: int | None = None  # the verdicts its replay could have changed (None: unknown)

    def verdicts(self) -> str:
        """What the replay the share came from did to verdicts, in words."""
        if self.changes:
            return "; ".join(self.changes)
        if self.judged == 0:
            return "none to change: its replay compared nothing (one engine, no finding)"
        of = f" of {self.judged}" if self.judged is not None else ""
        return f"none{of} beyond its resolution"

    def cell_share(self, repetitions: int) -> float:
        """Of measure_seconds, what a block's cells keep on average: its first whole."""
        return (1 + (repetitions - 1) * self.later_share) / repetitions

    @classmethod
    def assumed(cls) -> ExpectedLengths:
        corpus = _corpus()
        return cls(
            corpus["later_kept_share"],
            corpus["warm_up_kept_share"],
            "assumed, not measured on this host: repetitions after the first of their block "
            f"keep {corpus['later_kept_share']:.0%} of their seconds, as in "
            f"{corpus['most_conservative_class']}, the most conservative workload class of "
            f"{corpus['source']} ({corpus['method']}), warm-ups "
            f"{corpus['warm_up_kept_share']:.0%}; replay a run of this host (oltplab replay "
            "RESULTS) and pass --from RESULTS for its own shares",
            tuple(corpus["changes"]),
            corpus.get("verdicts_judged"),
        )

    @classmethod
    def replayed(cls, results: Path, path: Path) -> ExpectedLengths:
        """The shares `oltplab replay` found on a run (in `path`, its replay.json); what it
        could not show (no block ran twice, no warm-up kept), the corpus's, said."""
        try:
            found = load_json(path.read_text())
            later = found["later_kept_share"]
            warm = found.get("warm_ups") or {}
            warm_share = (
                warm["kept_seconds"] / warm["measured_seconds"]
                if warm.get("measured_seconds")
                else None
            )
            changes = tuple(
                _described(change) for change in found["changes"] if change["beyond_resolution"]
            )
        except FileNotFoundError:
            raise OltplabError(
                f"{path}: not found; run oltplab replay {results} first (it writes it)"
            ) from None
        except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError) as exc:
            raise OltplabError(
                f"{path}: unreadable ({exc}); run oltplab replay {results} again to rewrite it"
            ) from None
        corpus = _corpus()
        said = f"replayed on {results}: "
        if later is None:
            later = corpus["later_kept_share"]
            said += (
                f"no block ran twice there, so later repetitions are assumed to keep "
                f"{later:.0%} as in the most conservative class of {corpus['source']}"
            )
        else:
            said += f"repetitions after the first of their block kept {later:.0%} of their seconds"
        if warm_share is None:
            warm_share = corpus["warm_up_kept_share"]
            said += f", warm-ups assumed to keep {warm_share:.0%} (it recorded none)"
        else:
            said += f", warm-ups {warm_share:.0%}"
        return cls(float(later), warm_share, said, changes, found.get("verdicts_judged"))


def _described(change: dict[str, Any]) -> str:
    return f"{change['what']} {change['subject']}: {change['before']} -> {change['after']}"


def _corpus() -> dict[str, Any]:
    try:
        found: dict[str, Any] = json.loads(CORPUS_FILE.read_text())
        found["changes"] = [_described(c) for c in found["changes"]]
        return found
    except (OSError, ValueError, KeyError, TypeError) as exc:
        # The file ships with oltplab: unreadable, the installation is broken.
        raise OltplabError(
            f"{CORPUS_FILE}: unreadable ({exc}); reinstall oltplab, or regenerate it with "
            "python3 bench/corpus/shares.py"
        ) from None


def _expected(most: int, share: float, rule: StopRule) -> int:
    """A phase's expected seconds: its share of the most, but no sooner than the rule can
    stop it, and never beyond the most."""
    if most <= 0:
        return most
    return min(most, max(round(share * most), rule.earliest_stop))


def expected_spec(spec: Spec, lengths: ExpectedLengths) -> Spec:
    """The spec as its adaptive cells and warm-ups are expected to run: their lengths the
    expected ones, so that every estimate (and the dealing of blocks to shards) counts them."""
    protocol = spec.protocol
    rule = protocol.stop_rule
    cell_share = lengths.cell_share(protocol.repetitions)
    expected = {
        "measure_seconds": _expected(
            protocol.measure_seconds, cell_share, rule(protocol.measure_seconds)
        ),
        "warmup_ro_seconds": _expected(
            protocol.warmup_ro_seconds, lengths.warm_up_share, rule(protocol.warmup_ro_seconds)
        ),
        "warmup_rw_seconds": _expected(
            protocol.warmup_rw_seconds, lengths.warm_up_share, rule(protocol.warmup_rw_seconds)
        ),
    }
    return spec.model_copy(update={"protocol": protocol.model_copy(update=expected)})
