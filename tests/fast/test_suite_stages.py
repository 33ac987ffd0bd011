"""The suite's stages: a test's folder says whether it starts engines, the fast tests run
first, and a failure among them ends the run before any engine starts, in one lane as in
two (tests/support/lanes.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
CONFTEST = "from tests.conftest import *  # noqa: F403\n"
LANES = {"one lane": ["-n", "0"], "two lanes": ["-n", "2"]}
# No mark written: the folder gives it.
ENGINE_TESTS = """
def test_starts_an_engine():
    pass
"""


def write_suite(tmp_path: Path, unit_test: str, arguments: str = "") -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers = engine: starts engines\n")
    for folder in ("engine", "fast"):
        (tmp_path / folder).mkdir(exist_ok=True)
    (tmp_path / "engine" / "test_a_engines.py").write_text(ENGINE_TESTS)
    fast = f"def test_unit({arguments}):\n    {unit_test}\n"
    (tmp_path / "fast" / "test_b_unit.py").write_text(fast)


def run_suite(
    tmp_path: Path, unit_test: str, arguments: str = "", lanes: list[str] = LANES["one lane"]
) -> subprocess.CompletedProcess[str]:
    write_suite(tmp_path, unit_test, arguments)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", *lanes, str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("lanes", LANES.values(), ids=LANES.keys())
def test_the_fast_stage_runs_first_and_its_failure_stops_the_engine_tests(
    tmp_path: Path, lanes: list[str]
) -> None:
    """In two lanes, the lane given no fast test waits for the other's, whose failure
    ends both."""
    passing = run_suite(tmp_path, "assert True", lanes=lanes)
    assert passing.returncode == 0, passing.stdout
    # Each test's lines: its result, and in lanes also its start (xdist's -v says both).
    said = [line.split("::")[1].split()[0] for line in passing.stdout.splitlines() if "::" in line]
    assert said.count("test_starts_an_engine") >= 1
    assert said.index("test_starts_an_engine") > max(
        i for i, name in enumerate(said) if name == "test_unit"
    )

    failing = run_suite(tmp_path, "assert False", lanes=lanes)
    assert failing.returncode != 0
    assert "the engine tests did not start" in failing.stdout
    assert "test_starts_an_engine" not in failing.stdout
    assert (
        failing.stdout.rstrip().splitlines()[-1].startswith("=")
        and "1 failed in" in (failing.stdout.splitlines()[-1])
    )


def test_an_unmarked_test_that_starts_an_engine_fails_the_suite_by_its_module(
    tmp_path: Path,
) -> None:
    """A test without the engine mark whose tmp_path holds a server's log in an instance's
    work folder (what starting an engine leaves) fails the session, its module named."""
    work = "(tmp_path / '.work' / 'mysql-8.0.31')"
    planted = f"{work}.mkdir(parents=True); ({work} / 'mysqld.err').write_text('ready')"
    done = run_suite(tmp_path, planted, arguments="tmp_path")
    assert done.returncode != 0, done.stdout
    assert "started an engine without the engine mark: fast/test_b_unit.py" in done.stdout
    assert "move them to tests/engine/" in done.stdout


def test_the_engine_mark_follows_from_the_folder(tmp_path: Path) -> None:
    """`-m "not engine"` leaves out what lives in the engine folder, unmarked as it is."""
    write_suite(tmp_path, "assert True")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not engine",
         str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout
    assert "1 passed, 1 deselected" in done.stdout


SHARED_STATE = """
import os
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def made_once(tmp_path_factory):
    folder = tmp_path_factory.getbasetemp().parent
    with (folder / "made.txt").open("a") as made:
        made.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")


@pytest.mark.parametrize("n", range(6))
def test_reads_it(made_once, n):
    pass
"""


def test_tests_that_share_a_modules_state_share_a_lane(tmp_path: Path) -> None:
    """In two lanes, a module-scoped fixture is made once: its tests go to one lane
    together, while tests that share nothing are spread."""
    write_suite(tmp_path, "assert True")
    (tmp_path / "fast" / "test_c_shared.py").write_text(SHARED_STATE)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *LANES["two lanes"],
         "--basetemp", str(tmp_path / "base"), str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout
    assert len((tmp_path / "base" / "made.txt").read_text().split()) == 1
