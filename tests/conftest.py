"""The session's stages and the checks over all of it.

Where a test lives says what it needs: `tests/fast/` starts no engine, `tests/engine/`
starts real engines (their tests carry the `engine` mark because they live there), and
`tests/support/` holds every helper, so that no test module imports another. The fast
stage runs first; a failure there ends the run before any engine starts. The session runs
in two lanes (pytest-xdist workers, `-n 2` in pyproject.toml) that keep those stages
(tests/support/lanes.py); `-n 0` runs it in one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oltplab.base.errors import OltplabError
from oltplab.engines.families import registered
from tests.support import browser, lanes, phases
from tests.support.consistency import results_problems, written_problems

ENGINE_MARK = "engine"
ENGINE_FOLDER = "engine"
# The session fixture that runs the tutorial's demo (tests/engine/conftest.py): its readers
# share one lane.
DEMO_FIXTURE = "first_tutorial"
# Each test's tmp_path: its module, and whether it carries the engine mark.
_OWNERS: dict[Path, tuple[str, bool]] = {}


def _starts_engines(item: pytest.Item) -> bool:
    return item.get_closest_marker(ENGINE_MARK) is not None


def _is_engine_test(nodeid: str) -> bool:
    """The folder rule, on a test's id alone (all the controller of lanes has)."""
    return Path(nodeid.split("::")[0]).parent.name == ENGINE_FOLDER


def pytest_itemcollected(item: pytest.Item) -> None:
    """A test in the engine folder carries the engine mark, so `-m "not engine"` (the fast
    stage alone) leaves it out."""
    if item.path.parent.name == ENGINE_FOLDER:
        item.add_marker(ENGINE_MARK)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A fast stage first: every test that starts no engine, then the engine tests; tests
    that share a module's or the demo's state in one group, for one lane."""
    groups = lanes.lane_groups(items, DEMO_FIXTURE)
    lanes.stage_order(items, groups, _starts_engines)
    if lanes.is_worker(config):
        lanes.publish_groups(_lanes_folder(config), groups)


def _lanes_folder(config: pytest.Config) -> Path:
    return Path(config.workerinput[lanes.FOLDER_KEY])


# In a worker: the session whose last fast test is being torn down, and the gate's file.
_ENDING_FAST_STAGE: list[tuple[pytest.Session, Path]] = []


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """A failure in the fast stage ends the run before the first engine starts: there is
    no point spending twenty minutes on engines when a fast test already says no."""
    ending_fast_stage = not _starts_engines(item) and nextitem and _starts_engines(nextitem)
    if not ending_fast_stage:
        return
    if lanes.is_worker(item.config):
        gate = _lanes_folder(item.config) / lanes.GATE_FILE
        _ENDING_FAST_STAGE.append((item.session, gate))
    elif item.session.testsfailed:
        item.session.shouldstop = lanes.fast_stage_failed(item.session.testsfailed)


@pytest.hookimpl(trylast=True)  # after xdist has sent the report on to the controller
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """The controller of lanes counts the fast tests' reports. A worker whose next test
    starts engines waits for every lane's fast tests (its own last one reported), and stops
    if any failed."""
    for gate in _GATES.values():
        gate.reported(report)
    if report.when == "teardown" and _ENDING_FAST_STAGE:
        session, gate = _ENDING_FAST_STAGE.pop()
        failed = lanes.wait_at_gate(gate)
        if failed:
            session.shouldstop = lanes.fast_stage_failed(failed)


_GATES: dict[int, lanes.StageGate] = {}


def _gate(config: pytest.Config) -> lanes.StageGate:
    """The controller's stage gate, in the session's temporary folder."""
    if id(config) not in _GATES:
        root = lanes.session_root(config._tmp_path_factory, config)
        _GATES[id(config)] = lanes.StageGate(root / lanes.GATE_FILE, _is_engine_test)
    return _GATES[id(config)]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    node.workerinput[lanes.FOLDER_KEY] = str(_gate(node.config).path.parent)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    _gate(node.config).collected(ids)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> lanes.StagedScheduling:
    return lanes.StagedScheduling(config, log, _gate(config))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    folder = getattr(item, "funcargs", {}).get("tmp_path")
    if folder is not None:
        _OWNERS[Path(folder)] = (item.nodeid.split("::")[0], _starts_engines(item))


def engines_started_unmarked(root: Path, owners: dict[Path, tuple[str, bool]]) -> set[str]:
    """The test modules whose unmarked tests started an engine: a server's own log in an
    instance's work folder (`.work/<engine>/`) lies in their tmp_path."""
    logs = {family.log_name for family in registered()}
    found = set()
    for log in root.rglob("*"):
        if log.name not in logs or ".work" not in log.parts:
            continue
        owner = next((o for folder, o in owners.items() if log.is_relative_to(folder)), None)
        if owner is not None and not owner[1]:
            found.add(owner[0])
    return found


@pytest.fixture(scope="session", autouse=True)
def engines_start_only_where_marked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """After the last test: no test outside the engine folder started an engine, so that
    `-m "not engine"` (the fast stage) never does. Checked by what each test did, and named
    by module."""
    yield
    unmarked = engines_started_unmarked(tmp_path_factory.getbasetemp(), _OWNERS)
    assert not unmarked, (
        f"started an engine without the engine mark: {', '.join(sorted(unmarked))}; move "
        f"them to tests/{ENGINE_FOLDER}/"
    )


@pytest.fixture(scope="session", autouse=True)
def outputs_never_contradict_themselves(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    """After the last test: over every results directory the tests created, nothing that
    oltplab wrote or would write prints `nan` or an estimate outside its own interval."""
    yield
    root = tmp_path_factory.getbasetemp()
    problems = written_problems(root)
    for ledger in sorted(root.rglob("ledger.sqlite")):
        try:
            problems += results_problems(ledger.parent)
        except OltplabError:
            continue  # a ledger damaged on purpose, or a tree made to be refused
    assert not problems, "\n".join(problems[:30])


@pytest.fixture
def browser_page() -> Iterator[tuple[Any, list[str]]]:
    with browser.browser_page() as opened:
        yield opened


@pytest.fixture(scope="session", autouse=True)
def cluster_times_kept(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> None:
    phases.keep_cluster_times_in(lanes.session_root(tmp_path_factory, request.config))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Where the engine stage's time went, by phase, summed from every run's oltplab.log
    (in every lane's folder, all inside the session's)."""
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is None or lanes.is_worker(config):
        return
    try:
        root = factory.getbasetemp()
    except (OSError, ValueError):
        return
    lines = phases.phase_table(root)
    if lines:
        terminalreporter.section("where the runs' time went (oltplab.log phases)")
        for line in lines:
            terminalreporter.write_line(line)
