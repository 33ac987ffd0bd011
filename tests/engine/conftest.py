"""Engine tests start real engines and run real sysbench, with tiny data.

Every run a test starts shares the session's store of prepared datasets (as machines of a
distributed run share one), so that each engine binary's datadir is initialised and its
sysbench tables loaded once a session, not once a test. A test whose subject is that
provisioning says so with `@pytest.mark.fresh_engines`."""

from __future__ import annotations

from pathlib import Path

import pytest

from oltplab.store.scratch import SNAPSHOTS_ENV
from tests.support import lanes
from tests.support.cli import oltplab
from tests.support.tutorial import FIRST_TUTORIAL, TutorialRun, steps


@pytest.fixture(scope="session")
def first_tutorial(tmp_path_factory: pytest.TempPathFactory) -> TutorialRun:
    """The first-comparison tutorial's commands, run once as its reader runs them: its
    results are the demo's, which tests that only read them share (the demo is two
    minutes of the suite)."""
    folder = tmp_path_factory.mktemp("first-tutorial")
    done = [
        (step, [oltplab(*command, cwd=folder) for command in step.commands])
        for step in steps(FIRST_TUTORIAL)
    ]
    return TutorialRun(folder, done)


@pytest.fixture(scope="session")
def shared_snapshots(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Path:
    """One store for every lane: the product locks each entry while one run prepares it."""
    store = lanes.session_root(tmp_path_factory, request.config) / "snapshots"
    store.mkdir(exist_ok=True)
    return store


@pytest.fixture(autouse=True)
def snapshots_shared_by_the_session(
    request: pytest.FixtureRequest, shared_snapshots: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if request.node.get_closest_marker("fresh_engines") is None:
        monkeypatch.setenv(SNAPSHOTS_ENV, str(shared_snapshots))
    else:
        monkeypatch.delenv(SNAPSHOTS_ENV, raising=False)
