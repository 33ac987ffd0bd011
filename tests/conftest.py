"""Checks over the whole test session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from oltplab.base.errors import OltplabError
from oltplab.engines.families import registered
from tests.consistency import results_problems, written_problems

ENGINE_MARK = "engine"
# Each test's tmp_path: its module, and whether it carries the engine mark.
_OWNERS: dict[Path, tuple[str, bool]] = {}


def _starts_engines(item: pytest.Item) -> bool:
    return item.get_closest_marker(ENGINE_MARK) is not None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A fast stage first: every test that starts no engine (about two minutes), then the
    engine tests (the rest of the suite's time), each in its own order."""
    items.sort(key=_starts_engines)


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """A failure in the fast stage ends the run before the first engine starts: there is
    no point spending half an hour on engines when a unit test already says no."""
    ending_fast_stage = not _starts_engines(item) and nextitem and _starts_engines(nextitem)
    if ending_fast_stage and item.session.testsfailed:
        item.session.shouldstop = (
            f"{item.session.testsfailed} test(s) of the fast stage failed: the engine tests "
            "did not start (run them alone with -m engine)"
        )


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
    """After the last test: no test without the engine mark started an engine, so that
    `-m "not engine"` (the fast stage) never does. Checked by what each test did, and named
    by module."""
    yield
    unmarked = engines_started_unmarked(tmp_path_factory.getbasetemp(), _OWNERS)
    assert not unmarked, (
        f"started an engine without the engine mark: {', '.join(sorted(unmarked))}; mark them "
        "(pytestmark = pytest.mark.engine)"
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
