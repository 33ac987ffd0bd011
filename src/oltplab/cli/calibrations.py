"""`oltplab calibrations`: the figures oltplab keeps about this machine between runs, and
their clearing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from oltplab.cli.app import console, errors, flag
from oltplab.cli.options import bound


@dataclass(frozen=True)
class CalibrationsOptions:
    clear: Annotated[
        bool, flag("--clear", help="Remove every stored figure (after listing them).")
    ] = False


@bound(CalibrationsOptions)
def calibrations(given: CalibrationsOptions) -> None:
    """List what oltplab keeps about this machine between runs.

    Noise floors (`oltplab calibrate`: reports quote them, `plan --margin` plans with them)
    and between-session spreads (`oltplab reproduced`: `bisect` widens its verdicts by
    them), each with where and when it was measured, on how many rounds or sessions, and
    whether later commands use it: one from fewer than its minimum is kept, not used.
    """
    from oltplab.experiments.machine_figures import clear, machine_figures

    kept = machine_figures(clearing=given.clear)
    if kept.damaged:
        errors.print(f"note: {kept.damaged}", highlight=False, markup=False, soft_wrap=True)
    stores = ", ".join(map(str, kept.stores))
    again = "Next: oltplab calibrate ENGINE --order ORDER measures"
    if not kept.figures and not given.clear:
        console.print(f"no calibration stored ({stores})", highlight=False, soft_wrap=True)
        console.print(f"{again} this host's noise floor", highlight=False)
        return
    if kept.figures:
        console.print("Stored on this machine, oldest first:", highlight=False)
    for figure in kept.figures:
        console.print(f"- {figure.describe()}", highlight=False, soft_wrap=True)
    if given.clear:
        removed = ", ".join(map(str, clear()))
        console.print(f"cleared: {removed}", highlight=False, soft_wrap=True)
        console.print(f"{again} a noise floor again", highlight=False)
        return
    console.print(f"Kept in {stores}", highlight=False, soft_wrap=True)
    console.print("Next: oltplab calibrations --clear removes them all", highlight=False)
