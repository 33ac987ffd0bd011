"""The tight order where a verdict is asked (issue 47, finding 2): bisect measures its
steps as a precision search does, undecided ends say what would decide them, and a plain
run on a host noisier than its margin says so and names the command that decides."""

from __future__ import annotations

import json
import platform
from pathlib import Path

import pytest

from oltplab.analysis.bisection import CellChoice, Step
from oltplab.analysis.equivalence import judge
from oltplab.analysis.estimate import Comparison, Estimate
from oltplab.experiments.bisect import DEFAULT_SPEC, Bisector, BisectQuestion
from oltplab.experiments.measuring import floor_note
from oltplab.measure.request import RunRequest
from oltplab.spec import parse_spec

GOOD, BAD = "mariadb-10.11.5", "mariadb-11.4.5"


def bisector(spec_text: str, tmp_path: Path) -> Bisector:
    spec = parse_spec(spec_text, "bisect")
    question = BisectQuestion(
        [GOOD, BAD], CellChoice.parse(None, spec), 5.0, 20, budget_seconds=1800
    )
    return Bisector(spec, question, tmp_path, None)  # type: ignore[arg-type]


def test_bisect_steps_are_sliced_and_isolated_unless_the_spec_names_an_order(
    tmp_path: Path,
) -> None:
    default = bisector(DEFAULT_SPEC.format(good=GOOD, bad=BAD), tmp_path)
    step, _ = default.spec_for([GOOD, BAD], 3)
    assert (step.protocol.order, step.protocol.isolation, step.protocol.repetitions) == (
        "sliced", True, 3,
    )  # fmt: skip
    named = DEFAULT_SPEC.format(good=GOOD, bad=BAD) + 'order = "interleaved"\n'
    step, _ = bisector(named, tmp_path).spec_for([GOOD, BAD], 3)
    assert step.protocol.order == "interleaved"


def test_undecided_ends_say_the_rounds_and_the_budget_that_would_decide(tmp_path: Path) -> None:
    found = bisector(DEFAULT_SPEC.format(good=GOOD, bad=BAD), tmp_path)
    found.round_seconds = 40.0
    wide = Comparison(
        Estimate(1.0, -6.0, 8.0, 3, "t interval over rounds, paired"), "x", None, True
    )
    ends = Step(0, GOOD, BAD, 3, judge(wide, 5.0), tmp_path)
    assert ends.judged.needed is not None
    said = found._would_decide(ends)
    needed = ends.judged.needed
    assert f"; about {needed} rounds would decide" in said
    assert f"--max-repetitions {needed} --budget " in said and said.endswith("m")


@pytest.fixture
def noisy_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLTPLAB_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    entry = {
        "host": platform.node(), "order": "interleaved", "engine": GOOD,
        "noise_floor_pct": 9.0, "round_spread_pct": {"tps": 6.0}, "cell_seconds": 30,
        "session_overhead_s": 5.0, "measured_at": "2026-11-27T10:00:00+00:00",
    }  # fmt: skip
    (tmp_path / "cache" / "noise-floor.json").write_text(json.dumps({"calibrations": [entry]}))


def test_a_plain_run_on_a_host_noisier_than_its_margin_names_the_command_that_decides(
    tmp_path: Path, noisy_host: None
) -> None:
    text = f'workloads = ["oltp_read_only"]\n[[engines]]\nname = "{GOOD}"\n'
    plain = RunRequest(parse_spec(text, "s.toml"), text, "s.toml", tmp_path / "r")
    said = floor_note(plain)
    assert said is not None
    assert said.startswith(
        f"note: this host's noise floor, ±9.0% ({GOOD}, interleaved rounds, calibrated on "
        "2026-11-27), is wider than the margin of 5% ([compare] margin_pct)"
    )
    assert "`oltplab run s.toml --margin 5%` adds paired rounds" in said
    # A search already decides; a margin wider than the floor needs no word.
    searched = parse_spec(text + "[protocol]\ntarget_ci_pct = 5\n", "s.toml")
    assert floor_note(RunRequest(searched, text, "s.toml", tmp_path / "r")) is None
    wide = parse_spec(text + "[compare]\nmargin_pct = 10\n", "s.toml")
    assert floor_note(RunRequest(wide, text, "s.toml", tmp_path / "r")) is None
