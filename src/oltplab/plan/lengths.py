"""How long adaptive cells and warm-ups are expected to run, for estimates made before
they run: a share of their most, found by replaying the rule on an earlier run (`oltplab
replay` writes it) or assumed, and said with every figure that uses it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from oltplab.base.errors import OltplabError
from oltplab.base.stopping import StopRule
from oltplab.spec import Spec

# Assumed without a replay: what the rule kept of the 2026-sized synthetic tree in the
# tests (720 cells of 900 s, half settled within two minutes, a tenth drifting for most of
# their run: 23%), rounded up; for warm-ups, the same share.
ASSUMED_SHARE = 0.25
REPLAY_FILE = "replay.json"


@dataclass(frozen=True)
class ExpectedLengths:
    cell_share: float  # of measure_seconds an adaptive cell is expected to run
    warm_up_share: float  # of warmup_*_seconds
    basis: str  # where the shares come from, in words

    @classmethod
    def assumed(cls) -> ExpectedLengths:
        return cls(
            ASSUMED_SHARE,
            ASSUMED_SHARE,
            f"assumed: cells and warm-ups keep {ASSUMED_SHARE:.0%} of their length, as the "
            "rule kept of a 2026-sized synthetic tree; replay a run of this host "
            "(oltplab replay RESULTS) and pass --from RESULTS for its own share",
        )

    @classmethod
    def replayed(cls, results: Path) -> ExpectedLengths:
        """The shares `oltplab replay` found on a run; its warm-ups', if it had any."""
        path = results / REPLAY_FILE
        try:
            found = json.loads(path.read_text())
            cells = found["kept_seconds"] / found["measured_seconds"]
            warm = found.get("warm_ups") or {}
            warm_share = (
                warm["kept_seconds"] / warm["measured_seconds"]
                if warm.get("measured_seconds")
                else None
            )
        except FileNotFoundError:
            raise OltplabError(
                f"{path}: not found; run oltplab replay {results} first (it writes it)"
            ) from None
        except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError) as exc:
            raise OltplabError(
                f"{path}: unreadable ({exc}); run oltplab replay {results} again to rewrite it"
            ) from None
        said = f"replayed on {results}: cells kept {cells:.0%} of their seconds"
        if warm_share is None:
            said += f", warm-ups assumed to keep {ASSUMED_SHARE:.0%} (it recorded none)"
        else:
            said += f", warm-ups {warm_share:.0%}"
        return cls(cells, ASSUMED_SHARE if warm_share is None else warm_share, said)


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
    expected = {
        "measure_seconds": _expected(
            protocol.measure_seconds, lengths.cell_share, rule(protocol.measure_seconds)
        ),
        "warmup_ro_seconds": _expected(
            protocol.warmup_ro_seconds, lengths.warm_up_share, rule(protocol.warmup_ro_seconds)
        ),
        "warmup_rw_seconds": _expected(
            protocol.warmup_rw_seconds, lengths.warm_up_share, rule(protocol.warmup_rw_seconds)
        ),
    }
    return spec.model_copy(update={"protocol": protocol.model_copy(update=expected)})
