"""Whether a repeat reproduced the original (`reproduced`), and this host's between-session
spread, kept beside its calibrations: `reproduced` over runs of the same A/B stores what it
measured, `bisect` reads the latest to widen the verdicts it draws across builds
(analysis/sessions.py)."""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from oltplab.analysis.comparability import alike_notes, unlike
from oltplab.analysis.reproduce import points_of, reproduction
from oltplab.analysis.sessions import SessionSpread, session_spreads
from oltplab.base.asking import allow_mismatch_option, argument, margin_option, measure_option
from oltplab.base.errors import EXIT_REGRESSED
from oltplab.base.given import margin_pct, measure_of
from oltplab.base.metrics import Measure
from oltplab.base.nesting import load_json
from oltplab.base.telling import Told
from oltplab.base.wording import report_hint
from oltplab.engines.cache import cache_root
from oltplab.store.files import write_atomic

# Sessions a stored spread needs before bisect widens a verdict by it. A spread is a
# standard deviation: from two sessions it has one degree of freedom, and the true one may
# be up to 16 times it (the 90% chi-square bound); from three, up to 4.4 times.
MIN_SESSIONS = 3


@dataclass(frozen=True)
class StoredSpread:
    spread_pct: float
    label: str  # the A/B it was measured on
    sessions: int
    measured_on: str  # the date of the last session

    def describe(self) -> str:
        return (
            f"{self.spread_pct:.2f}% between sessions ({self.sessions} sessions of "
            f"{self.label}, {self.measured_on})"
        )


def store() -> Path:
    """Where this machine's between-session spreads are kept."""
    return cache_root() / "session-spread.json"


def stored_spreads() -> list[dict[str, Any]]:
    """Every spread stored on this machine, oldest first."""
    path = store()
    if not path.is_file():
        return []
    try:
        found = load_json(path.read_text()).get("spreads", [])
    except (ValueError, AttributeError):
        return []  # a damaged store is rewritten by the next save
    return [s for s in found if isinstance(s, dict)]


def save(spreads: list[SessionSpread]) -> Path:
    """Each A/B's spread under this host and today's date."""
    entries = stored_spreads()
    today = datetime.now(UTC).isoformat(timespec="seconds")
    for spread in spreads:
        entries.append(
            {
                "host": platform.node(),
                "label": spread.label,
                "spread_pct": round(spread.spread_pct, 3),
                "sessions": len(spread.sessions),
                "sources": [str(s.source) for s in spread.sessions],
                "measured_at": today,
            }
        )
    path = store()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps({"spreads": entries}, indent=2) + "\n")
    return path


@dataclass(frozen=True)
class BetweenSessions:
    spreads: list[SessionSpread]
    stored: Path
    sessions: int

    def lines(self) -> list[str]:
        """Each spread, where it is stored, and whether bisect uses it."""
        said = ["\n".join(spread.lines()) for spread in self.spreads]
        said.append(
            f"Stored for this host in {self.stored}: bisect widens the verdicts it draws "
            "across builds by the widest of these spreads; `oltplab calibrations` lists what "
            "is stored."
        )
        if self.sessions < MIN_SESSIONS:
            said.append(
                f"Not used by bisect: {self.sessions} sessions give a spread too uncertain to "
                f"widen a verdict by (it takes {MIN_SESSIONS}: `oltplab reproduced ORIGINAL "
                "REPEAT MORE...`)."
            )
        return said


def between_sessions(sessions: list[Path], measure: Measure) -> BetweenSessions | None:
    """The spread of each engine comparison over the sessions, stored for this host; None
    where they compare no engines."""
    spreads = session_spreads([points_of(s, measure) for s in sessions])
    return BetweenSessions(spreads, save(spreads), len(sessions)) if spreads else None


def usable(entry: dict[str, Any]) -> bool:
    """Whether a stored spread has the sessions a verdict may be widened by."""
    sessions = entry.get("sessions")
    return isinstance(sessions, int) and sessions >= MIN_SESSIONS


def spread_here() -> StoredSpread | None:
    """The widest spread of this host's latest measurement of enough sessions (its A/Bs
    stored together)."""
    mine = [s for s in stored_spreads() if s.get("host") == platform.node() and usable(s)]
    if not mine:
        return None
    latest = max(str(s.get("measured_at", "")) for s in mine)
    widest = max((s for s in mine if s.get("measured_at") == latest), key=lambda s: s["spread_pct"])
    return StoredSpread(
        float(widest["spread_pct"]),
        str(widest["label"]),
        int(widest["sessions"]),
        latest[:10],
    )


@dataclass(frozen=True, kw_only=True)
class ReproducedAsked:
    original: Path = argument("The results directory measured first.", "ORIGINAL")
    repeat: Path = argument("The results directory measured again.", "REPEAT")
    more: list[Path] | None = argument(
        "More sessions of the same spec, each judged against ORIGINAL too.", "[MORE]...", None
    )
    margin: str = margin_option("they count as the same within ±PCT.", "5%")
    measure: str = measure_option()
    allow_mismatch: bool = allow_mismatch_option()

    def told(self) -> Told:
        """Each later session judged against ORIGINAL, and where the sessions compare
        engines, the spread between them (stored for this host); exits 1 when any is not
        reproduced, else 5 when any is undecided."""
        sessions = [self.original, self.repeat, *(self.more or [])]
        notes = alike_notes(unlike(sessions, refuse=not self.allow_mismatch))
        chosen, margin = measure_of(self.measure), margin_pct(self.margin, 5.0)
        found = [reproduction(self.original, again, margin, chosen) for again in sessions[1:]]
        spreads = between_sessions(sessions, chosen)
        between = (
            () if spreads is None else (f"\nBetween sessions, on {chosen.label}:", *spreads.lines())
        )
        statuses = {judged.exit_status for judged in found}
        return Told(
            (*notes, *(said for judged in found for said in judged.said()), *between),
            report_hint(sessions),
            EXIT_REGRESSED if EXIT_REGRESSED in statuses else max(statuses),
        )
