"""A disk that fills up during a run: one line and exit 3, nothing stored lost or
half-written, and the same command completes the matrix once space is freed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.integration.conftest import spec_text

pytestmark = [
    pytest.mark.engine,
    pytest.mark.skipif(
        os.geteuid() != 0, reason="mounting a small tmpfs needs root (CI runs as root)"
    ),
]


def test_a_full_disk_stops_the_run_and_a_resume_completes_it(tmp_path):
    (tmp_path / "s.toml").write_text(
        spec_text(
            ["mariadb-10.11.5"],
            threads=[1, 2, 3],
            measure=5,
            extra='[config]\nredo_capacity = "32M"\n',
        ).replace(
            "stop_timeout_seconds = 60", "stop_timeout_seconds = 20\nsysbench_grace_seconds = 10"
        )
    )
    scenario = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-m",
         "tests.integration.full_disk", str(tmp_path), "400m"],
        capture_output=True, text=True, timeout=1500, check=False,
    )  # fmt: skip
    assert scenario.returncode == 0, scenario.stderr
    outcome = json.loads((tmp_path / "outcome.json").read_text())
    [done_before] = [c for c in outcome["before_fill"] if c["status"] == "done"]

    first = outcome["first"]
    assert first["code"] == 3, first
    lines = first["stderr"].strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in first["stderr"], first["stderr"]
    assert "no space left on the device" in lines[0] or "needed to" in lines[0], lines[0]
    assert "run the same command again" in lines[0]
    # Nothing stored is lost: the cell done before the disk filled is still done, as it was.
    after_stop = {c["key"]: c for c in outcome["after_stop"]}
    assert after_stop[done_before["key"]] == done_before
    assert all(c["status"] != "failed" for c in outcome["after_stop"]), outcome["after_stop"]

    second = outcome["second"]
    assert second["code"] == 0, second
    resumed = {c["key"]: c for c in outcome["after_resume"]}
    assert [c["status"] for c in resumed.values()] == ["done"] * 3
    assert resumed[done_before["key"]] == done_before  # not measured again
    assert outcome["integrity"] == "ok"
