"""Numbers that never contradict themselves, at the size of the 2026 report: every printed
and exported estimate lies inside its own interval, and no output says `nan`."""

from __future__ import annotations

from pathlib import Path

from oltplab.analysis.dataset import load
from oltplab.analysis.model import AnalysisOptions, analyse
from oltplab.report.export import table_rows
from oltplab.sysbench.reading import read_output
from tests.support.cli import oltplab
from tests.support.consistency import analysis_problems, printed_contradictions, row_contradictions
from tests.support.synthetic import ENGINES_2026, tree_2026


def test_the_2026_sized_tree_has_no_contradictions(tmp_path: Path) -> None:
    files = tree_2026(tmp_path / "benchmark_data", seconds=300)
    imported = oltplab("import", "benchmark_data", "--results", "res", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    analysis = analyse(load([tmp_path / "res"], None), AnalysisOptions())
    assert len(analysis.dataset.cells) == files == 720
    # each family's later versions against its first, at every tier, thread count, scenario
    assert len(analysis.progression) >= (len(ENGINES_2026) - 3) * 3 * 8 * 3
    assert sum(r.change is not None and r.change.low_pct is not None for r in analysis.progression)
    assert analysis_problems(analysis) == []
    # The whole-run columns still give what sysbench printed, the figures published
    # reports quote: every cell's TPS, and every progression row's difference.
    printed = {}
    for path in (tmp_path / "benchmark_data").rglob("*.sysbench.txt"):
        summary = read_output(path).summary
        assert summary is not None
        scenario, family, version = path.parts[-4:-1]
        printed[(scenario, family, version, path.name)] = summary.tps
    columns, rows = table_rows("summary", analysis)
    assert "tps_whole_run" in columns and len(rows) == len(printed) == 720
    assert sorted(r["tps_whole_run"] for r in rows) == sorted(printed.values())
    _, progression = table_rows("progression", analysis)
    whole = {(c.scenario, c.tier, c.engine, c.threads): c.tps for c in analysis.dataset.cells}
    for row in progression:
        engine = f"{row['family']}-{row['version']}"
        base = f"{row['family']}-{row['baseline_version']}"
        ratio = (
            whole[(row["scenario"], row["tier"], engine, row["threads"])]
            / whole[(row["scenario"], row["tier"], base, row["threads"])]
        )
        assert row["whole_run_diff_pct"] == round((ratio - 1) * 100, 1)


def test_the_checks_see_a_contradiction() -> None:
    assert printed_contradictions("Buffer pool lever 3.0x [3.1x, 3.1x]") == ["3.0x [3.1x, 3.1x]"]
    assert printed_contradictions("| 1,234 [1,201, 1,266] | -2.2% [-2.8, -1.7] |") == []
    assert printed_contradictions("-2.2% [-2.8, -1.7]; 410 [421, 433]") == ["410 [421, 433]"]
    rows = [{"tps": 410.0, "tps_ci_low": 421.0, "tps_ci_high": 433.0}]
    assert row_contradictions(rows, [("tps", "tps_ci_low", "tps_ci_high")]) == rows
