"""`oltplab calibrations`: the figures oltplab keeps about this machine between runs, and
their clearing."""

from __future__ import annotations

from typing import Annotated

from oltplab.base.errors import OltplabError
from oltplab.cli.app import console, errors, flag


def calibrations(
    clear: Annotated[
        bool, flag("--clear", help="Remove every stored figure (after listing them).")
    ] = False,
) -> None:
    """List what oltplab keeps about this machine between runs.

    Noise floors (`oltplab calibrate`: reports quote them, `plan --margin` plans with them)
    and between-session spreads (`oltplab reproduced`: `bisect` widens its verdicts by
    them), each with where and when it was measured, on how many rounds or sessions, and
    whether later commands use it: one from fewer than its minimum is kept, not used.
    """
    from oltplab.experiments.machine_figures import clear as clear_stored
    from oltplab.experiments.machine_figures import stored_figures, stores

    try:
        found = stored_figures()
    except OltplabError as exc:
        if not clear:
            raise
        # Clearing is how a damaged store is mended: its listing is told, not needed.
        errors.print(f"note: {exc}", highlight=False, markup=False, soft_wrap=True)
        found = []
    if not found and not clear:
        console.print(
            f"no calibration stored ({', '.join(map(str, stores()))})",
            highlight=False,
            soft_wrap=True,
        )
        console.print(
            "Next: oltplab calibrate ENGINE --order ORDER measures this host's noise floor",
            highlight=False,
        )
        return
    if found:
        console.print("Stored on this machine, oldest first:", highlight=False)
    for figure in found:
        when = figure.measured_at[:16].replace("T", " ") or "undated"
        used = "used" if figure.used else "not used"
        console.print(
            f"- {figure.kind} ±{figure.value_pct:.2f}%: {figure.of}; host {figure.host}, "
            f"{when}, {figure.samples_text()}, {used}; measured in {figure.measured_in or '-'}",
            highlight=False,
            soft_wrap=True,
        )
    if clear:
        removed = clear_stored()
        console.print(f"cleared: {', '.join(map(str, removed))}", highlight=False, soft_wrap=True)
        console.print(
            "Next: oltplab calibrate ENGINE --order ORDER measures a noise floor again",
            highlight=False,
        )
        return
    console.print(f"Kept in {', '.join(map(str, stores()))}", highlight=False, soft_wrap=True)
    console.print("Next: oltplab calibrations --clear removes them all", highlight=False)
