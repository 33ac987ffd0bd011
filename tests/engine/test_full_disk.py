"""A disk that fills up during a run: one line and exit 3, nothing stored lost or
half-written, and the same command completes the matrix once space is freed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.engines import spec_text

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="mounting a small tmpfs needs root (CI runs as root)"
)


def filled_then_resumed(
    tmp_path: Path, threads: list[int], measure: int, size: str, *work: str
) -> dict:
    """The outcome of tests.support.full_disk: a run into a `size` disk filled after its
    first cell, then resumed once the ballast is gone; the checks every such run passes."""
    (tmp_path / "s.toml").write_text(
        spec_text(
            ["mariadb-10.11.5"],
            threads=threads,
            measure=measure,
            warmup=0,
            extra='[config]\nredo_capacity = "32M"\n',
        ).replace(
            # An engine whose datadir is on the full disk hangs: it is killed after the stop
            # timeout, and its sysbench after the grace.
            "stop_timeout_seconds = 60",
            "stop_timeout_seconds = 10\nsysbench_grace_seconds = 10",
        )
    )
    scenario = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-m",
         "tests.support.full_disk", str(tmp_path), size, *work],
        capture_output=True, text=True, timeout=1500, check=False,
    )  # fmt: skip
    assert scenario.returncode == 0, scenario.stderr
    outcome = json.loads((tmp_path / "outcome.json").read_text())
    # The disk was filled by the ballast, not already full with the run's own files.
    assert outcome["ballast_bytes"] > 0, outcome["disk_before_fill"]
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
    assert [c["status"] for c in resumed.values()] == ["done"] * len(threads)
    assert resumed[done_before["key"]] == done_before  # not measured again
    assert outcome["integrity"] == "ok"
    return outcome


# Its subject is a disk filling while the engine is provisioned and run.
@pytest.mark.fresh_engines
def test_a_full_disk_stops_the_run_and_a_resume_completes_it(tmp_path):
    filled_then_resumed(tmp_path, [1, 2], 3, "400m")


def test_a_resume_restores_the_datadir_into_the_work_folder_whatever_the_results_disk(
    tmp_path,
):
    """Results on a disk too small for the datadir, --work-dir on a large one: the resume
    after a full results disk restores the datadir into the work folder, which has room,
    rather than stopping because the results disk has none."""
    work = tmp_path / "work"
    filled_then_resumed(tmp_path, [1, 2], 3, "40m", str(work))
    assert list(work.glob("oltplab-*/*")), "the engine's files are in the work folder"
