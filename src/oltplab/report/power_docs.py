"""The power curve for the docs: the figure and a table drawn from the committed trials
(analysis/power.py), by the docs build (scripts/docs.sh):

    python3 -m oltplab.report.power_docs DIR   # DIR/power-curve.png and DIR/power-curve.md
"""

from __future__ import annotations

import sys
from pathlib import Path

from oltplab.analysis.power import PACKED, cost_line, curve, curve_lines, read_trials
from oltplab.report.charts import Chart, render
from oltplab.report.power_chart import CHART_FILE, curve_data, measured_where
from oltplab.store.files import write_atomic


def write_docs(folder: Path, packed: Path = PACKED) -> tuple[Path, Path]:
    """The figure and a Markdown table of the curve, for the docs to include."""
    trials = read_trials(packed)
    points = curve(trials)
    where = measured_where(trials)
    folder.mkdir(parents=True, exist_ok=True)
    png = render(
        Chart(folder / CHART_FILE, "power", f"Decided DIFFERENT: {where}", curve_data(points))
    )
    table = folder / "power-curve.md"
    write_atomic(
        table,
        f"Measured: {where}; {cost_line(trials)}.\n\n```text\n"
        + "\n".join(curve_lines(points))
        + "\n```\n",
    )
    return png, table


if __name__ == "__main__":
    for written in write_docs(Path(sys.argv[1])):
        print(written)
