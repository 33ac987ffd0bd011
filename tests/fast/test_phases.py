"""A run's time by stage, said in one line of its log and summed back over many."""

from __future__ import annotations

from oltplab.measure.phases import Phases, Stage, read_phases


def test_each_stage_gets_the_seconds_until_the_next_and_the_line_sums_them_back():
    now = [100.0]
    phases = Phases(clock=lambda: now[0])
    for stage, seconds in [
        (Stage.SETUP, 2.0),
        (Stage.WARM_UP, 8.0),
        (Stage.CELLS, 30.0),
        (Stage.SUMMARIES, 4.0),
        (Stage.SETUP, 1.5),
        (Stage.OTHER, 0.25),
    ]:
        phases.enter(stage)
        now[0] += seconds
    line = phases.line()
    assert line == (
        "phases: engine setup 3.5 s, warm-up 8.0 s, cells 30.0 s, summaries 4.0 s, other 0.2 s"
    )
    log = [f"2026-12-06 06:15:04,634 INFO {line}", "2026-12-06 06:15:05,000 INFO other", ""]
    twice = read_phases(log + log)
    assert twice[Stage.SETUP] == 7.0 and twice[Stage.CELLS] == 60.0
    assert sum(twice.values()) == sum(read_phases(log).values()) * 2
