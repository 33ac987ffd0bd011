"""Which margin to ask for: per margin, the smallest difference a precision search decides
four times in five within a budget, from this host's round-to-round spread, and what the
real trials recorded on this host showed (`plan --margin` and `calibrate` say them)."""

from __future__ import annotations

import platform

from oltplab.analysis.power import PACKED, curve, read_trials
from oltplab.analysis.precision import MIN_ROUNDS, rounds_to_decide, smallest_decided
from oltplab.base.sizes import duration_text
from oltplab.base.telling import Rows

# The budget a margin is advised for when the spec sets none.
DEFAULT_BUDGET_MINUTES = 30
ASKED_MARGINS = (0.5, 1.0, 2.0, 3.0, 5.0)


def which_margin(
    spread: float, round_seconds: float, budget_seconds: float, measure: str
) -> tuple[Rows, str]:
    """For each margin one might ask: the smallest difference decided DIFFERENT four times
    in five within the budget, and what deciding twice the margin costs."""
    fit = int(budget_seconds // max(round_seconds, 1e-9))
    columns = ("--margin", "smallest decided (80% power)", "to decide 2x the margin")
    rows = []
    for asked in ASKED_MARGINS:
        rounds = rounds_to_decide(spread, asked, 2 * asked)
        rows.append(
            (
                f"{asked:g}%",
                f"{smallest_decided(spread, asked, fit):.1f}%" if fit >= MIN_ROUNDS else "-",
                f"{rounds} rounds, {duration_text(rounds * round_seconds)}" if rounds else "-",
            )
        )
    title = (
        f"Which margin to ask for: {measure} on this host, within "
        f"{duration_text(budget_seconds)} ({fit} rounds)"
    )
    return Rows(title, columns, tuple(rows), right=columns), (
        "A difference D is told apart by --margin D/2: no difference of D ends SAME, and D "
        "ends DIFFERENT four times in five in the rounds shown (e.g. a 2% regression: "
        "--margin 1%). From this host's round-to-round spread, one look; the spec's "
        "budget_minutes sets the budget"
        + (
            "."
            if fit >= MIN_ROUNDS
            else f" (here under the {MIN_ROUNDS} rounds any verdict needs)."
        )
    )


def trials_here(margin: float) -> tuple[str, ...]:
    """What the rule did in the real trials recorded on this host, at the margin asked."""
    if not PACKED.is_file():
        return ()
    trials = [t for t in read_trials(PACKED) if t.host.get("hostname") == platform.node()]
    if not trials:
        return ()
    lines = [
        f"Measured on this host ({len(trials)} real trials of bench/power.py, "
        f"{max(t.started_at for t in trials).date()}) at ±{margin:g}%:"
    ]
    for point in curve(trials, (margin,)):
        planted = "A/A pairs" if point.planted_pct == 0 else f"planted {point.planted_pct:g}%"
        cost = (
            ""
            if point.median_rounds is None
            else f", median {point.median_rounds:g} rounds, {point.median_minutes:.1f} min"
        )
        lines.append(
            f"  {planted}: DIFFERENT in {point.different} of {point.trials}, SAME "
            f"{point.same}, UNKNOWN {point.unknown}{cost}"
        )
    return ("\n".join(lines),)
