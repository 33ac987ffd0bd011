"""A measured cell, whole: what the ledger keeps of it. The runner judges one from what
sysbench and the telemetry devices gave; rebuild and import read one back from the raw
files. The ledger takes it in one transaction (store/recording.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oltplab.store.status import Status
from oltplab.sysbench.output import NO_SAMPLES, Summary
from oltplab.sysbench.transactions import KindResults

TelemetryRow = tuple[str, str, int, float]  # source, metric, second, value


@dataclass(frozen=True, eq=False)
class CellOutcome:
    summary: Summary | None
    flags: tuple[str, ...]
    artifact: str  # the raw output, relative to the results directory (or as imported)
    reason: str | None = None  # why it failed; None when done
    notes: str = ""
    # Per-interval samples (rows of SAMPLE_COLUMNS); an import streams them before it
    # finishes the cell, and leaves this empty.
    samples: np.ndarray = field(default_factory=lambda: NO_SAMPLES)
    telemetry: tuple[TelemetryRow, ...] = ()
    # Where the telemetry files sit on the sysbench clock (measure/telemetry.py's clock).
    clock: dict[str, Any] | None = None
    finished_at: str | None = None  # now, unless the journal recorded when
    histogram: tuple[tuple[float, int], ...] = ()  # sysbench's latency buckets (ms, events)
    ignored_errors: tuple[tuple[str, int], ...] = ()  # (code, count)
    kind_results: KindResults | None = None

    @property
    def status(self) -> Status:
        return Status.DONE if self.summary is not None and self.reason is None else Status.FAILED
