"""Adaptive repetitions and adaptive cell lengths on real engines."""

import re
from pathlib import Path

import pytest

from oltplab.base.stopping import StopRule, stop_point
from oltplab.sysbench.output import parse_output

from .conftest import cells, oltplab, spec_text

pytestmark = pytest.mark.engine


def test_until_cv_adds_rounds_up_to_the_maximum_and_resumes_cleanly(tmp_path):
    (tmp_path / "s.toml").write_text(
        spec_text(["mariadb-debian"], threads=[1, 2], measure=2, warmup=0)
    )
    # An impossible target: every group is repeated up to the maximum.
    strict = oltplab(
        "run", "s.toml", "-r", "out", "--until-cv", "0", "--max-repetitions", "3", cwd=tmp_path
    )
    assert strict.returncode == 0, strict.stdout + strict.stderr
    reps = sorted((r["threads"], r["repetition"]) for r in cells(tmp_path / "out"))
    assert reps == [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (2, 3)]
    assert {r["status"] for r in cells(tmp_path / "out")} == {"done"}
    # The same spec again (without --until-cv) accepts the extra repetitions as its own.
    again = oltplab("run", "s.toml", "-r", "out", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(cells(tmp_path / "out")) == 6

    # A loose target stops as soon as two repetitions agree.
    loose = oltplab("run", "s.toml", "-r", "loose", "--until-cv", "10", cwd=tmp_path)
    assert loose.returncode == 0
    assert sorted(r["repetition"] for r in cells(tmp_path / "loose")) == [1, 1, 2, 2]


def names_its_reason(notes: str) -> bool:
    """The unsettled note names a failed condition: an interval or a drift over the
    target (5%; drift twice that), or a warm-up not over."""
    wide = re.search(r"steady mean \+-([\d.]+)%", notes)
    drift = re.search(r"drift up to ([\d.]+)%", notes)
    return (
        "still warming up" in notes
        or (wide is not None and float(wide[1]) > 5)
        or (drift is not None and float(drift[1]) > 10)
        or wide is None
    )


SLOWING = Path(__file__).parent.parent / "data" / "workloads" / "slowing_read_only.lua"


def test_adaptive_cells_stop_when_settled_and_a_drifting_one_runs_on_unsettled(tmp_path):
    """stop = "adaptive" on two engines, one workload that slows down on MariaDB only (one
    more point select per transaction every 2 s): MySQL's flat cell ends early with
    sysbench's own summary, MariaDB's never settles, runs to measure_seconds and is
    flagged; every raw file re-imports to the figures the run stored."""
    workloads = (
        '[[workloads]]\nname = "slowing"\nscript = "' + str(SLOWING) + '"\nread_only = true\n'
        'options = {slowing_on = "MariaDB"}\n'
    )  # fmt: skip
    text = spec_text(["mysql-8.0.31", "mariadb-10.11.5"], threads=[2], measure=50, warmup=10)
    text = text.split("\n", 1)[1] + workloads
    # Read-only seconds here vary by about 5% and now and then one is halved by another
    # load: +-5% is what 50 s of them settle to (at +-3%, one of the two flat cells of a
    # trial ran its whole length, its fitted line rising 8.9% across it).
    text = text.replace("[protocol]\n", '[protocol]\nstop = "adaptive"\nstop_min_seconds = 10\n'
                        "stop_target_pct = 5\n")  # fmt: skip
    (tmp_path / "s.toml").write_text(text)
    done = oltplab("run", "s.toml", "-r", "out", "--no-telemetry", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {r["engine"]: r for r in cells(tmp_path / "out")}
    assert sorted(rows) == ["mariadb-10.11.5", "mysql-8.0.31"]
    assert {r["status"] for r in rows.values()} == {"done"}
    rule = StopRule(target_ci_pct=5, min_seconds=10, max_seconds=50)
    ran, replayed = {}, {}
    for engine, row in rows.items():
        output = parse_output((tmp_path / "out" / row["artifact"]).read_text())
        assert output.summary is not None  # sysbench's own summary, however it ended
        ran[engine] = output.summary.total_time_s
        # The live watch decided what the rule decides on the seconds the cell kept.
        replayed[engine] = stop_point(output.tps, rule)
        assert replayed[engine].describe() in row["notes"], (engine, replayed, row["notes"])
    flat, drifting = rows["mysql-8.0.31"], rows["mariadb-10.11.5"]
    # Settled or not is what tells: sysbench may not print the last second of its run (49
    # seconds of a 50 s cell), so a cell that ran its whole length can have fewer.
    if replayed["mysql-8.0.31"].settled:
        assert ran["mysql-8.0.31"] < replayed["mysql-8.0.31"].seconds + 3, ran
        assert "unsettled" not in flat["flags"], flat["flags"]
    else:
        # Flat read-only seconds here settle to +-5% within 20-40 s, most of the time;
        # when another load halves some of them (0.86 CPU for 38 of 80 s in one suite),
        # they spread wider (+-4.6% with a drift, in another) or step up 7% at 14 s (a
        # level MSER-5 cannot yet tell from a warm-up in 49 s, in a third), the rule
        # rightly runs on, and the note says which of its conditions the seconds failed.
        assert "unsettled" in flat["flags"].split(","), (flat["flags"], flat["notes"])
        assert names_its_reason(flat["notes"]), flat["notes"]
    assert ran["mariadb-10.11.5"] >= 49, ran
    assert "unsettled" in drifting["flags"].split(","), (drifting["flags"], drifting["notes"])
    # No stop file is left behind, nor put among the results.
    assert not list((tmp_path / "out").rglob("*.stop"))
    reimported = oltplab("import", "out", "-r", "again", cwd=tmp_path)
    assert reimported.returncode == 0, reimported.stdout + reimported.stderr
    measured = {r["engine"]: r["tps"] for r in rows.values()}
    assert {r["engine"]: r["tps"] for r in cells(tmp_path / "again")} == measured
