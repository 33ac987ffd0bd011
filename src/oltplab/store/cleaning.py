"""What a finished run no longer needs: its scratch (the engines' datadirs, their snapshots,
their option files and secrets, prepare's output) and the results directory's own store of
prepared datasets. A run still to finish needs them to resume, so they stay. The ledger,
the raw outputs and the run's record are never touched: every report, export and import
reads those alone."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from oltplab.base.errors import OltplabError
from oltplab.base.telling import Told
from oltplab.store.directory import ResultsDir
from oltplab.store.files import format_bytes, tree_bytes
from oltplab.store.ledger import Ledger
from oltplab.store.lock import ResultsLock
from oltplab.store.scratch import scratch_root
from oltplab.store.status import Status


@dataclass(frozen=True)
class Cleaned:
    results: Path
    removed: list[Path]  # the folders removed
    freed_bytes: int
    unfinished: int  # cells still to measure: nothing was removed when there are any

    def told(self) -> Told:
        if self.unfinished:
            return Told(
                (
                    f"{self.results}: {self.unfinished} cell(s) still to measure; nothing "
                    "removed (a resume needs the engines' snapshots)",
                ),
                f"oltplab status {self.results}",
            )
        where = ", ".join(str(folder) for folder in self.removed) or "nothing to remove"
        return Told(
            (
                f"freed {format_bytes(self.freed_bytes)}: {where}",
                f"kept: the ledger, raw outputs and run.json in {self.results}",
            ),
            f"oltplab report {self.results}",
        )


def clean(results: Path) -> Cleaned:
    """Removes a finished run's scratch, holding the results directory as a run does (a
    run writing to it is refused, ResultsBusy)."""
    if not ResultsDir(results).ledger.is_file():
        raise OltplabError(f"{results}: no ledger here; name a results directory")
    with ResultsLock(results):
        ledger = Ledger.open(results, create=False, journal=False)
        try:
            statuses = ledger.status_of().values()
        finally:
            ledger.close()
        unfinished = sum(s in (Status.PENDING, Status.RUNNING) for s in statuses)
        if unfinished:
            return Cleaned(results, [], 0, unfinished)
        removed, freed = [], 0
        for folder in (scratch_root(results), ResultsDir(results).snapshots):
            if folder.is_dir():
                freed += tree_bytes(folder)
                # rmtree removes a link the server's uid planted; it never follows one.
                shutil.rmtree(folder)
                removed.append(folder)
        return Cleaned(results, removed, freed, 0)
