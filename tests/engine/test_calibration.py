"""`oltplab calibrate` at the smallest settings its CLI accepts succeeds on a real engine
(issue 47, finding 6), run as `plan --margin` tells a host without a calibration to run it
(issue 60: the hint left out the spec's order, and calibrated another); what it stores
lets that plan go on, and is quoted by a report of this host's runs with the engine and
date it measured."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from oltplab.engines.cache import cache_root
from tests.support.cli import oltplab
from tests.support.engines import SAME_BINARY_TWICE, spec_text


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


def test_the_plans_hint_at_the_clis_minimum_settings_lets_the_plan_go_on(
    tmp_path: Path, calibrations: Path
) -> None:
    calibrations.unlink(missing_ok=True)  # a host with none (put back after the test)
    (tmp_path / "spec.toml").write_text(
        spec_text([], threads=[1], measure=3, extra=SAME_BINARY_TWICE) + 'order = "interleaved"\n'
    )
    refused = oltplab("plan", "spec.toml", "--margin", "3%", cwd=tmp_path)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    hint = re.search(r"run `oltplab (calibrate [^`]+)` first", refused.stderr)
    assert hint is not None, refused.stderr
    minimum = ["--repetitions", "3", "--seconds", "3", "--threads", "1", "-r", "cal"]
    done = oltplab(*shlex.split(hint[1]), *minimum, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "noise floor on this host: ±" in done.stdout
    stored = json.loads(calibrations.read_text())["calibrations"][-1]
    assert (stored["engine"], stored["order"]) == ("mariadb-10.11.5", "interleaved")
    assert stored["results"] == str(tmp_path / "cal") and stored["rounds"] == 3
    planned = oltplab("plan", "spec.toml", "--margin", "3%", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr

    # The calibration's own run, reported: its host and order, so quoted with its date.
    report = oltplab("report", "cal", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    markdown = (tmp_path / "cal" / "report" / "report.md").read_text()
    day = stored["measured_at"][:10]
    assert f"(mariadb-10.11.5, interleaved rounds, calibrated on {day})" in markdown
