"""`oltplab calibrate` at the smallest settings its CLI accepts succeeds on a real engine
(issue 47, finding 6), and what it stores is quoted by a report of this host's runs with
the engine and date it measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oltplab.engines.cache import cache_root
from tests.support.cli import oltplab


@pytest.fixture
def calibrations() -> object:
    """This machine's stored calibrations, put back as they were after the test."""
    store = cache_root() / "noise-floor.json"
    before = store.read_bytes() if store.is_file() else None
    yield store
    if before is None:
        store.unlink(missing_ok=True)
    else:
        store.write_bytes(before)


def test_calibrate_at_the_clis_minimum_settings_succeeds(
    tmp_path: Path, calibrations: Path
) -> None:
    done = oltplab(
        "calibrate", "mariadb-10.11.5", "--repetitions", "3", "--seconds", "3",
        "--threads", "1", "-r", "cal", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "noise floor on this host: ±" in done.stdout
    stored = json.loads(calibrations.read_text())["calibrations"][-1]
    assert (stored["engine"], stored["order"]) == ("mariadb-10.11.5", "sliced")
    assert stored["results"] == str(tmp_path / "cal")

    # The calibration's own run, reported: its host and order, so quoted with its date.
    report = oltplab("report", "cal", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    markdown = (tmp_path / "cal" / "report" / "report.md").read_text()
    day = stored["measured_at"][:10]
    assert f"(mariadb-10.11.5, sliced rounds, calibrated on {day})" in markdown
