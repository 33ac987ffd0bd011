"""A point's TPC-C-like figures over its cells, as TPC-C users read them: NOPM and TPM,
NOPM a warehouse against the specification's ceiling (efficiency), the districts' own count
of New-Orders, and whether the data stayed consistent. The terminal, the report and the
export all say them from here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from oltplab.base.metrics import (
    CONSISTENCY_CHECKED,
    CONSISTENCY_FAILED,
    NOPM,
    NOPM_DISTRICTS,
    TPM,
    WAREHOUSES_ACTIVE,
)
from oltplab.base.wording import counted
from oltplab.sysbench.transactions import KindResults
from oltplab.workloads.tpcc import efficiency_pct


@dataclass(frozen=True)
class OrderFigures:
    nopm: float | None  # means over the cells
    tpm: float | None
    warehouses: float | None
    efficiency_pct: float | None
    districts_gap_pct: float | None  # the largest gap between NOPM counted both ways
    consistency: str


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def order_figures(cells: Sequence[KindResults]) -> OrderFigures:
    nopm = _mean([c.metrics.get(NOPM) for c in cells])
    warehouses = _mean([c.metrics.get(WAREHOUSES_ACTIVE) for c in cells])
    gaps = [
        100 * abs(districts / own - 1)
        for c in cells
        if (own := c.metrics.get(NOPM)) and (districts := c.metrics.get(NOPM_DISTRICTS)) is not None
    ]
    return OrderFigures(
        nopm=nopm,
        tpm=_mean([c.metrics.get(TPM) for c in cells]),
        warehouses=warehouses,
        efficiency_pct=efficiency_pct(nopm, warehouses),
        districts_gap_pct=max(gaps) if gaps else None,
        consistency=consistency(cells),
    )


def consistency(cells: Sequence[KindResults]) -> str:
    """What the checks after each cell found: "4 conditions held in 3 cells", or in how
    many cells one failed (the cell's `inconsistent` flag and notes say which)."""
    checked = [c.metrics.get(CONSISTENCY_CHECKED) for c in cells]
    if all(n is None for n in checked):
        return "not recorded"  # measured before the checks were counted
    conditions = int(max(n or 0 for n in checked))
    if not conditions:
        return "not checked"
    failing = sum(1 for c in cells if c.metrics.get(CONSISTENCY_FAILED))
    if failing:
        return f"failed in {failing} of {counted(len(cells), 'cell')} (flagged inconsistent)"
    return f"{counted(conditions, 'condition')} held in {counted(len(cells), 'cell')}"
