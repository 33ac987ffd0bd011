"""Rounds and machine time for every comparison of a spec to be decided against a margin,
from this host's round-to-round spread of each measure (`oltplab plan --margin`): enough
rounds for the 90% interval's half-width to fall under half the margin, so that no
difference ends SAME and one of twice the margin ends DIFFERENT, each nine times in ten or
more (tests/fast/test_precision.py)."""

from __future__ import annotations

from dataclasses import dataclass

from oltplab.analysis.precision import rounds_needed
from oltplab.base.errors import OltplabError
from oltplab.base.metrics import TPS, Measure
from oltplab.base.sizes import duration_text
from oltplab.base.telling import Rows, Said
from oltplab.experiments.calibrate import (
    Calibration,
    CalibrationAsked,
    calibration_folder,
    calibration_here,
)
from oltplab.experiments.margin_advice import DEFAULT_BUDGET_MINUTES, trials_here, which_margin
from oltplab.experiments.until_answered import rounds_order, with_rounds
from oltplab.plan import build_plan, plan_seconds
from oltplab.spec import Spec
from oltplab.spec.catalog import CATALOG


@dataclass(frozen=True)
class CalibrationWanted:
    engine: str  # a catalog engine of the spec
    order: str  # the rounds the spec's search runs

    @property
    def command(self) -> str:
        # The order always named: calibrate's own default is another (sliced).
        return f"oltplab calibrate {self.engine} --order {self.order}"

    def asked(self) -> CalibrationAsked:
        """The calibration with the calibrate command's defaults, in the spec's order."""
        folder = calibration_folder(self.engine)
        return CalibrationAsked(
            self.engine, folder, 5, 30, [1, 4], "oltp_read_only", TPS, self.order
        )


def calibration_wanted(spec: Spec, calibrate: bool) -> CalibrationWanted | None:
    """The calibration to measure first where this host has none of the spec's order of
    rounds (None where it has one); refused, with the command that would measure it,
    unless `calibrate` asks for it and the spec names a catalog engine to measure."""
    order = rounds_order(spec)
    if calibration_here(order) is not None:
        return None
    engine = next((e.name for e in spec.engines if e.name in CATALOG), None)
    wanted = CalibrationWanted(engine or "ENGINE", order)
    if not calibrate or engine is None:
        raise OltplabError(
            f"--margin: the spec's rounds are {order}, and this host has no calibration "
            f"of {order} rounds to plan with; run `{wanted.command}` first (about 10 minutes), "
            + ("or pass --calibrate to run it now" if engine is not None else "then plan")
        )
    return wanted


@dataclass(frozen=True)
class MeasureRounds:
    measure: str
    spread_pct: float  # round to round, on this host
    rounds: int | None  # None: more than rounds_needed counts to


@dataclass(frozen=True)
class RoundsPlan:
    margin: float
    order: str
    calibration: Calibration
    sessions: int  # in one round
    round_seconds: float  # one round's machine time
    measures: tuple[MeasureRounds, ...]

    def rows(self, chosen: str) -> list[tuple[str, ...]]:
        """Each measure (the chosen one marked), its spread, and its rounds and their time."""
        return [
            (
                f"{row.measure} (chosen)" if row.measure == chosen else row.measure,
                f"±{row.spread_pct:.2f}%",
                str(row.rounds) if row.rounds else "over 10,000",
                duration_text(row.rounds * self.round_seconds) if row.rounds else "-",
            )
            for row in self.measures
        ]

    def describe(self) -> str:
        """What the figures rest on, and what that many rounds decide."""
        overhead = self.calibration.session_overhead_s
        what = {
            "alternating": f"cells back to back, {overhead:.1f} s apart, the engines kept running",
            "sliced": "cells at once in short time slots, the engines kept running",
        }.get(self.order, f"warm-ups, cells, and {overhead:.0f} s a session to restore and start")
        return (
            f"Planned with this host's calibration of {self.calibration.describe()} (`oltplab "
            f"calibrations` lists it). One round: {self.sessions} session(s), "
            f"{duration_text(self.round_seconds)} ({what}, as calibrated with "
            f"{self.calibration.cell_seconds} s cells). With that many rounds no difference "
            f"ends SAME and one of ±{2 * self.margin:g}% ends DIFFERENT, each nine times in ten "
            f"or more; `oltplab run SPEC --margin {self.margin:g}%` stops as soon as each "
            "comparison is decided."
        )


def rounds_plan(spec: Spec, margin: float) -> RoundsPlan:
    """The rounds each measure needs, from this host's calibration of the spec's order of
    rounds (calibration_wanted says first where there is none)."""
    order = rounds_order(spec)
    calibration = calibration_here(order)
    assert calibration is not None  # calibration_wanted has had one measured, or refused

    def seconds_of(rounds: int) -> tuple[float, int]:
        spec_of, _ = with_rounds(spec, rounds)
        sessions = build_plan(spec_of)
        cells = {c.key for s in sessions for c in s.cells}
        return plan_seconds(spec_of, sessions, cells), len(sessions)

    # What one more round costs: its cells, and its warm-ups unless the engines alternate.
    (one, sessions_one), (two, sessions_two) = seconds_of(1), seconds_of(2)
    sessions = sessions_two - sessions_one
    round_seconds = two - one + sessions * calibration.session_overhead_s
    measures = tuple(
        MeasureRounds(name, spread, rounds_needed(spread, margin / 2))
        for name, spread in calibration.round_spread_pct.items()
    )
    return RoundsPlan(margin, order, calibration, sessions, round_seconds, measures)


def rounds_said(spec: Spec, margin: float, chosen: Measure) -> tuple[Said, ...]:
    """What `plan --margin` says beside the plan: the rounds every comparison needs on this
    host, which margin to ask for within the spec's budget, and what the real trials on
    this host showed."""
    found = rounds_plan(spec, margin)
    columns = ("measure", "round-to-round spread", "rounds", "machine time")
    table = Rows(
        f"Rounds for every comparison to be decided against ±{margin:g}% on this host",
        columns,
        tuple(found.rows(chosen.name)),
        right=columns[1:],
    )
    spread = found.calibration.round_spread_pct.get(chosen.name)
    budget = spec.protocol.budget or DEFAULT_BUDGET_MINUTES * 60.0
    advice = (
        () if spread is None else which_margin(spread, found.round_seconds, budget, chosen.label)
    )
    return (table, found.describe(), *advice, *trials_here(margin))
