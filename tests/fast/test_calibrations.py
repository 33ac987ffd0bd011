"""Calibrations kept per host, order of rounds, engine and date, and quoted only where they
speak for the results (issue 47, finding 6); the CLI's smallest calibration is one that can
succeed, and a failed one says what it lacked."""

from __future__ import annotations

import json
import platform
from pathlib import Path

import numpy as np
import pytest

from oltplab.analysis.dataset import Dataset
from oltplab.analysis.estimate import PointSample, compare
from oltplab.base.errors import OltplabError
from oltplab.experiments.calibrate import NoiseFloor, floor_for
from oltplab.experiments.session_spread import spread_here
from tests.support.cli import assert_one_line_error, oltplab


def calibration(host: str, order: str, engine: str, pct: float, when: str) -> dict[str, object]:
    return {
        "host": host, "order": order, "engine": engine, "noise_floor_pct": pct,
        "round_spread_pct": {"tps": pct / 2}, "cell_seconds": 30, "session_overhead_s": 5.0,
        "measured_at": when, "results": "runs/calibrate",
    }  # fmt: skip


def results_of(host: str, order: str, started: str) -> Dataset:
    return Dataset(
        sources=[Path("r")], cells=[], series={}, engines={}, variables={},
        runs=[{"host": {"hostname": host}, "started_at": started}], specs=[], order=order,
    )  # fmt: skip


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OLTPLAB_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    return tmp_path / "cache" / "noise-floor.json"


def test_a_report_quotes_its_own_hosts_and_orders_calibration_nearest_its_date(
    store: Path,
) -> None:
    store.write_text(
        json.dumps(
            {
                "calibrations": [
                    calibration("vm", "interleaved", "mariadb-10.11.5", 9.0, "2026-01-05T10:00:00+00:00"),
                    calibration("vm", "interleaved", "mysql-8.0.31", 4.0, "2026-06-01T10:00:00+00:00"),
                    calibration("vm", "sliced", "mysql-8.0.31", 1.5, "2026-03-01T10:00:00+00:00"),
                    calibration("other", "interleaved", "mysql-8.0.31", 2.0, "2026-01-06T10:00:00+00:00"),
                ]
            }
        )
    )  # fmt: skip
    january = floor_for(results_of("vm", "as-listed", "2026-01-06T12:00:00+00:00"))
    assert january is not None
    assert (
        january.describe()
        == "±9.0% (mariadb-10.11.5, interleaved rounds, calibrated on 2026-01-05)"
    )
    june = floor_for(results_of("vm", "interleaved", "2026-05-30T12:00:00+00:00"))
    assert june is not None and (june.pct, june.measured_on) == (4.0, "2026-06-01")
    sliced = floor_for(results_of("vm", "sliced", "2026-01-06T12:00:00+00:00"))
    assert sliced is not None and (sliced.pct, sliced.order) == (1.5, "sliced")
    # No calibration of this host's alternating rounds, none of a host never calibrated.
    assert floor_for(results_of("vm", "alternating", "2026-01-06T12:00:00+00:00")) is None
    assert floor_for(results_of("laptop", "as-listed", "2026-01-06T12:00:00+00:00")) is None


def test_a_calibration_stored_before_they_were_kept_per_date_is_still_read(store: Path) -> None:
    old = calibration("x", "x", "mariadb-10.11.5", 3.0, "2026-02-01T00:00:00+00:00")
    del old["host"], old["order"]
    store.write_text(json.dumps({platform.node(): old, f"{platform.node()}/sliced": old}))
    found = floor_for(results_of(platform.node(), "interleaved", "2026-02-02T00:00:00+00:00"))
    assert found is not None and found.pct == 3.0 and found.order == "interleaved"


def test_the_smallest_calibration_the_cli_takes_is_one_that_can_give_an_interval(
    tmp_path: Path,
) -> None:
    assert_one_line_error(
        oltplab("calibrate", "mariadb-10.11.5", "--repetitions", "2", cwd=tmp_path),
        "'--repetitions'",
        "greater than or equal to 3",
    )
    assert list(tmp_path.iterdir()) == []


def test_a_calibration_without_an_interval_says_what_it_lacked() -> None:
    rng = np.random.default_rng(1)
    two = {r: rng.normal(1000, 10, 30) for r in (1, 2)}
    versus = compare(PointSample(two), PointSample(dict(two)))
    with pytest.raises(OltplabError) as said:
        NoiseFloor("mariadb-10.11.5", {("ro", 1): versus}).value  # noqa: B018
    assert "too few repetitions: 2" in str(said.value)
    assert "give what is short, --repetitions or --seconds" in str(said.value)
    assert "run longer cells" not in str(said.value)


def test_stored_figures_are_listed_with_their_samples_and_a_thin_one_is_not_used(
    store: Path,
) -> None:
    """(issue 60) Two tiny runs stored a between-session spread of 56.8% that every later
    bisect on the machine used unseen. `oltplab calibrations` lists each stored figure with
    where, when and on how many samples it was measured; a spread of two sessions is kept
    and shown, not used; `--clear` removes them all."""
    floor = calibration(platform.node(), "sliced", "mariadb-10.11.5", 2.0, "2026-12-01T10:00:00")
    store.write_text(json.dumps({"calibrations": [{**floor, "rounds": 5}]}))
    spreads = store.with_name("session-spread.json")
    spread = {"host": platform.node(), "label": "b vs a (ro, 128M, 4 threads)",
              "sources": ["runs/x", "runs/y"], "measured_at": "2026-12-02T10:00:00+00:00"}  # fmt: skip
    spreads.write_text(
        json.dumps({"spreads": [{**spread, "spread_pct": 3.1, "sessions": 3},
                                {**spread, "spread_pct": 56.8, "sessions": 2,
                                 "measured_at": "2026-12-03T10:00:00+00:00"}]})
    )  # fmt: skip
    # The latest measurement is the thin one: bisect takes the one of three sessions.
    used = spread_here()
    assert used is not None and (used.spread_pct, used.sessions) == (3.1, 3)
    listed = oltplab("calibrations", cwd=store.parent)
    assert listed.returncode == 0, listed.stderr
    rows = listed.stdout.splitlines()
    assert (
        f"- noise floor ±2.00%: mariadb-10.11.5, sliced rounds; host {platform.node()}, "
        "2026-12-01 10:00, 5 rounds, used; measured in runs/calibrate"
    ) in rows, listed.stdout
    assert any(r.startswith("- between-session spread ±56.80%: b vs a") and
               "2 sessions (fewer than 3), not used; measured in runs/x, runs/y" in r
               for r in rows), listed.stdout  # fmt: skip
    assert str(store) in " ".join(listed.stdout.split())
    cleared = oltplab("calibrations", "--clear", cwd=store.parent)
    assert cleared.returncode == 0, cleared.stderr
    assert not store.exists() and not spreads.exists()
    assert "no calibration stored" in oltplab("calibrations", cwd=store.parent).stdout


def test_a_damaged_store_is_refused_when_listed_and_cleared_when_asked(store: Path) -> None:
    store.write_text('{"calibrations": [')
    listed = oltplab("calibrations", cwd=store.parent)
    assert_one_line_error(listed, f"{store}: damaged", code=3)
    cleared = oltplab("calibrations", "--clear", cwd=store.parent)
    assert cleared.returncode == 0, cleared.stderr
    assert f"note: {store}: damaged" in " ".join(cleared.stderr.split())
    assert not store.exists() and f"cleared: {store}" in " ".join(cleared.stdout.split())
