"""Two lanes: the suite's tests shared between two pytest-xdist workers, its stages kept.

Most of the engine stage is waiting: a cell lasts its seconds however many cores are free,
so a second lane halves what the cells and warm-ups cost on this two-core machine. The
stages stay what they are in one lane: every fast test ends before the first engine test
starts, and a failure among the fast tests ends the run before any engine starts.

How the stages are kept: the controller's scheduler gives out the fast tests first. A
worker runs a test only once it was given the next one (pytest tears a test down knowing
its successor), so a worker whose next test starts engines waits, after sending its last
fast test's report, at the gate: a file the controller writes once every fast test has
reported, with how many failed. A worker with no fast test left to finish is given no
engine test before the gate is open.

Tests share a lane (one xdist group) when they share what is costly to make: the
tutorial's demo, or a module's own fixtures (a test host, a foreign server, a cluster)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

# The session's folder, given to each worker: the gate and the groups are files in it.
FOLDER_KEY = "oltplab_lanes"
GATE_FILE = "fast-stage-done.json"
GROUPS_FILE = "lane-groups.json"
DEMO_GROUP = "demo"
# Fixtures that make state for a whole module: its tests run in one lane, where it is made once.
SHARED_SCOPES = {"module", "package", "class"}


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def in_lanes(config: pytest.Config) -> bool:
    """Whether this is the controller of a session run in lanes."""
    return config.pluginmanager.has_plugin("dsession")


def session_root(factory: pytest.TempPathFactory, config: pytest.Config) -> Path:
    """The session's temporary folder, the same in every lane (a worker's is inside it)."""
    base = factory.getbasetemp()
    return base.parent if is_worker(config) else base


def lane_groups(items: list[pytest.Item], demo_fixture: str) -> dict[str, str]:
    """Each test's group: the tests that must share one lane with it (itself alone when
    none must)."""
    groups = {}
    for item in items:
        definitions = item._fixtureinfo.name2fixturedefs.values()
        if demo_fixture in item.fixturenames:
            groups[item.nodeid] = DEMO_GROUP
        elif any(fixture.scope in SHARED_SCOPES for chain in definitions for fixture in chain):
            groups[item.nodeid] = item.nodeid.split("::")[0]
        else:
            groups[item.nodeid] = item.nodeid
    return groups


def stage_order(
    items: list[pytest.Item],
    groups: dict[str, str],
    starts_engines: Callable[[pytest.Item], bool],
) -> None:
    """Fast tests first, then engine tests; within a stage the biggest groups first (a long
    group started last would leave one lane running alone), each group's tests together
    and in their own order."""
    names = [groups[item.nodeid] for item in items]
    sizes: dict[str, int] = {}
    for name in names:
        sizes[name] = sizes.get(name, 0) + 1
    first_seen = {name: index for index, name in reversed(list(enumerate(names)))}
    keyed = sorted(
        range(len(items)),
        key=lambda i: (starts_engines(items[i]), -sizes[names[i]], first_seen[names[i]], i),
    )
    items[:] = [items[i] for i in keyed]


def publish_groups(folder: Path, groups: dict[str, str]) -> None:
    """In a worker: the groups, for the controller's scheduler, which knows tests by id
    only (each worker writes the same)."""
    partial = folder / f"{GROUPS_FILE}.{os.getpid()}"
    partial.write_text(json.dumps(groups))
    partial.rename(folder / GROUPS_FILE)


def fast_stage_failed(count: int) -> str:
    return (
        f"{count} test(s) of the fast stage failed: the engine tests did not start (run them "
        "alone with -m engine)"
    )


class StageGate:
    """The controller's count of the fast tests still to report, and the gate file."""

    def __init__(self, path: Path, is_engine_test: Callable[[str], bool]) -> None:
        self.path = path
        self.is_engine_test = is_engine_test
        self.opened: Callable[[], None] = lambda: None
        self.waiting: set[str] | None = None  # fast tests not yet torn down; None: not collected
        self.failed: set[str] = set()

    def collected(self, ids: Iterable[str]) -> None:
        if self.waiting is None:
            self.waiting = {nodeid for nodeid in ids if not self.is_engine_test(nodeid)}
            self._open_when_done()

    @property
    def is_open(self) -> bool:
        return self.path.exists()

    def reported(self, report: pytest.TestReport) -> None:
        """Counts a fast test's report. A test's last report is its teardown's, or '???'
        for one whose worker died under it."""
        if self.is_engine_test(report.nodeid) or self.waiting is None:
            return
        if report.failed:
            self.failed.add(report.nodeid)
        if report.when in ("teardown", "???"):
            self.waiting.discard(report.nodeid)
            self._open_when_done()

    def _open_when_done(self) -> None:
        if self.waiting or self.is_open:
            return
        partial = self.path.with_suffix(".partial")
        partial.write_text(json.dumps({"failed": len(self.failed)}))
        partial.rename(self.path)
        self.opened()


def wait_at_gate(path: Path) -> int:
    """In a worker: once the gate is open, how many fast tests failed."""
    while not path.exists():
        time.sleep(0.2)
    return int(json.loads(path.read_text())["failed"])


class StagedScheduling(LoadScopeScheduling):
    """xdist's scope scheduling over the suite's groups (a whole group to one worker), but
    for an engine test given to a worker with no fast test left to finish while the gate
    is closed: that worker waits for it. (xdist's own groups name each test by its group,
    which pytest 9.2's test ids no longer take.)"""

    def __init__(self, config: pytest.Config, log: Any, gate: StageGate) -> None:
        super().__init__(config, log)
        self.gate = gate
        gate.opened = self._gate_opened
        self._groups: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        if self._groups is None:  # every worker has collected, and written them, by now
            self._groups = json.loads((self.gate.path.parent / GROUPS_FILE).read_text())
        return self._groups.get(nodeid, nodeid)

    def _assign_work_unit(self, node: Any) -> None:
        first_test = next(iter(next(iter(self.workqueue.values()))))
        held_at_the_gate = self.gate.is_engine_test(first_test) and not self.gate.is_open
        if held_at_the_gate and not self._finishing_fast_tests(node):
            return
        super()._assign_work_unit(node)

    def _finishing_fast_tests(self, node: Any) -> bool:
        return any(
            not done and not self.gate.is_engine_test(nodeid)
            for unit in self.assigned_work.get(node, {}).values()
            for nodeid, done in unit.items()
        )

    def _gate_opened(self) -> None:
        """Gives the waiting workers their first engine tests, or ends the session when a
        fast test failed."""
        if self.gate.failed:
            dsession = self.config.pluginmanager.getplugin("dsession")
            dsession.shouldstop = fast_stage_failed(len(self.gate.failed))
            return
        if self.collection is None:
            # Open before any work was given out (a run of engine tests alone): schedule()
            # gives it out, and rescheduling now would shut down every worker, no work
            # queued yet, before it gets any.
            return
        for node in self.nodes:
            if not self._pending_of(self.assigned_work[node]):
                self._reschedule(node)
