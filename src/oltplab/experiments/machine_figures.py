"""Every figure oltplab keeps about this machine between runs, in one list: the noise floors
`calibrate` measured (reports quote them, `plan --margin` plans with them) and the
between-session spreads `reproduced` measured (`bisect` widens its verdicts by them). Each
with where and when it was measured and on how many samples, whether later commands use it,
and a way to clear them all."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oltplab.base.asking import option
from oltplab.base.errors import OltplabError
from oltplab.base.stats import MIN_REPETITIONS
from oltplab.base.telling import Note, Told
from oltplab.experiments import calibrate, session_spread

NOISE_FLOOR = "noise floor"
SESSION_SPREAD = "between-session spread"


@dataclass(frozen=True)
class StoredFigure:
    kind: str  # NOISE_FLOOR or SESSION_SPREAD
    of: str  # what it was measured on: an engine and order, or an A/B
    host: str
    measured_at: str
    value_pct: float
    samples: int | None  # rounds or sessions; None: stored before they were kept
    minimum: int
    measured_in: str  # the results it came from

    @property
    def used(self) -> bool:
        """Whether later commands use it: one from too few samples is kept, not used."""
        return self.samples is None or self.samples >= self.minimum

    def samples_text(self) -> str:
        unit = "rounds" if self.kind == NOISE_FLOOR else "sessions"
        if self.samples is None:
            return "not recorded"
        return f"{self.samples} {unit}" + ("" if self.used else f" (fewer than {self.minimum})")

    def describe(self) -> str:
        when = self.measured_at[:16].replace("T", " ") or "undated"
        used = "used" if self.used else "not used"
        return (
            f"{self.kind} ±{self.value_pct:.2f}%: {self.of}; host {self.host}, {when}, "
            f"{self.samples_text()}, {used}; measured in {self.measured_in or '-'}"
        )


@dataclass(frozen=True)
class MachineFigures:
    figures: list[StoredFigure]
    stores: list[Path]
    damaged: str | None  # why the stores could not be read, when they are to be cleared


def machine_figures(clearing: bool) -> MachineFigures:
    """The stored figures and where they are kept. A store that cannot be read is an
    error, unless it is to be cleared: clearing is how a damaged store is mended, so its
    listing is told, not needed."""
    try:
        return MachineFigures(stored_figures(), stores(), None)
    except OltplabError as exc:
        if not clearing:
            raise
        return MachineFigures([], stores(), str(exc))


def stored_figures() -> list[StoredFigure]:
    """Every stored figure, noise floors first, each kind oldest first."""
    found = []
    for entry in calibrate.stored_calibrations():
        rounds = entry.get("rounds")
        found.append(
            StoredFigure(
                NOISE_FLOOR,
                f"{entry.get('engine', '?')}, {entry.get('order', '?')} rounds",
                str(entry.get("host", "?")),
                str(entry.get("measured_at", "")),
                float(entry["noise_floor_pct"]),
                rounds if isinstance(rounds, int) else None,
                MIN_REPETITIONS,  # calibrate's own least --repetitions
                str(entry.get("results", "")),
            )
        )
    for entry in session_spread.stored_spreads():
        sessions = entry.get("sessions")
        found.append(
            StoredFigure(
                SESSION_SPREAD,
                str(entry.get("label", "?")),
                str(entry.get("host", "?")),
                str(entry.get("measured_at", "")),
                float(entry.get("spread_pct", 0.0)),
                sessions if isinstance(sessions, int) else None,
                session_spread.MIN_SESSIONS,
                ", ".join(map(str, entry.get("sources", []))),
            )
        )
    return found


def stores() -> list[Path]:
    return [calibrate.store(), session_spread.store()]


def clear() -> list[Path]:
    """Removes every stored figure; the files removed."""
    removed = [path for path in stores() if path.is_file()]
    for path in removed:
        path.unlink()
    return removed


@dataclass(frozen=True, kw_only=True)
class MachineFiguresAsked:
    clear: bool = option(False, "Remove every stored figure (after listing them).", "--clear")

    def told(self) -> Told:
        """Each stored figure, and where they are kept; with --clear, what was removed."""
        kept = machine_figures(clearing=self.clear)
        damaged = (Note(f"note: {kept.damaged}"),) if kept.damaged else ()
        stores = ", ".join(map(str, kept.stores))
        again = "oltplab calibrate ENGINE --order ORDER measures"
        if not kept.figures and not self.clear:
            return Told((f"no calibration stored ({stores})",), f"{again} this host's noise floor")
        heading = ("Stored on this machine, oldest first:",) if kept.figures else ()
        listed = (*damaged, *heading, *(f"- {figure.describe()}" for figure in kept.figures))
        if self.clear:
            removed = ", ".join(map(str, clear()))
            return Told((*listed, f"cleared: {removed}"), f"{again} a noise floor again")
        return Told((*listed, f"Kept in {stores}"), "oltplab calibrations --clear removes them all")
