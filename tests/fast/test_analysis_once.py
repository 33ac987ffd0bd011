"""One `oltplab report` computes each analysis table once: the Markdown, the HTML page, the
charts and the exports read one model, so a figure cannot differ between them."""

from __future__ import annotations

import functools
import importlib
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from oltplab.analysis import findings, model, points, tables, telemetry
from oltplab.cli import app
from tests.support.cli import oltplab
from tests.support.golden import build_tree

# Each builds one table (or the findings, the flag list, the notable cells) of a report.
ONCE = [
    (tables, "progression"),
    (tables, "differences"),
    (tables, "relative"),
    (tables, "stability"),
    (tables, "repetitions"),
    (tables, "pairwise"),
    (tables, "flagged"),
    (tables, "network_latency"),
    (findings, "findings"),
    (telemetry, "operation_table"),
    (telemetry, "notable_cells"),
]
# Built once per metric or per cell, never twice for the same one.
ONCE_EACH = [(points, "grids"), (telemetry, "timeline")]


def counting(
    monkeypatch: pytest.MonkeyPatch, original: Callable[..., Any], calls: Counter[Any], name: str
) -> None:
    """Count the calls of `original` however a module imported it."""

    @functools.wraps(original)
    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[(name, *(repr(a) for a in args[1:2]))] += 1
        calls[name] += 1
        return original(*args, **kwargs)

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("oltplab") and (
            getattr(module, name, None) is original
        ):
            monkeypatch.setattr(module, name, counted)


def test_each_table_is_computed_once_per_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_tree(tmp_path / "benchmark_data")
    imported = oltplab("import", "benchmark_data", "--results", "res", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    # Load every module the report uses, so that each one's imported name is counted too.
    for name in ("report.export", "report.charts", "report.html", "report.markdown"):
        importlib.import_module(f"oltplab.{name}")

    calls: Counter[Any] = Counter()
    for module, name in ONCE + ONCE_EACH:
        counting(monkeypatch, getattr(module, name), calls, name)
    analysed = model.analyse
    counting(monkeypatch, analysed, calls, "analyse")

    result = CliRunner().invoke(app, ["report", str(tmp_path / "res")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "res" / "report" / "report.html").exists()

    assert calls["analyse"] == 1
    for _, name in ONCE:
        assert calls[name] == 1, f"{name} computed {calls[name]} times"
    # tps, qps, p95 latency (the tree's one percentile), average and max latency
    assert calls["grids"] == 5
    assert calls["timeline"] >= 1
    repeated = {key: n for key, n in calls.items() if isinstance(key, tuple) and n > 1}
    assert not repeated, f"computed more than once for the same input: {repeated}"
