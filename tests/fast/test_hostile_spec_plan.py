"""Hostile specs and plan options (issue 42, third pass): each is refused with one line
naming the file, key or option and what is expected, exit 2, before anything is printed
or stored."""

from __future__ import annotations

import json
import os
import platform
import re
import signal
import threading
import time
from pathlib import Path

import pytest

from tests.support.cli import assert_one_line_error, oltplab, start_oltplab

QUICK = Path(__file__).parents[2] / "examples" / "quick.toml"
ENGINE = 'engines = [{name = "mariadb-debian"}]\n'
HOST = '[[hosts]]\nname = "db1"\nssh = "root@10.0.0.2"\n'
A_NUMBER = "expected a number"
A_WHOLE_NUMBER = "expected a whole number"


def test_an_adaptive_plan_of_cells_shorter_than_the_rules_minimum_is_bad_input(tmp_path):
    """quick.toml measures 15 s, under the 60 s an adaptive cell runs at least: the plan
    says so in one line (as `run` of such a spec does), where it used to exit 4."""
    planned = oltplab("plan", str(QUICK), "--stop", "adaptive", cwd=tmp_path)
    assert_one_line_error(
        planned,
        "quick.toml with --stop adaptive",
        "stop_min_seconds 60 (the default) is beyond measure_seconds 15",
    )
    assert planned.stdout == ""
    long_enough = QUICK.read_text().replace("measure_seconds = 15", "measure_seconds = 300")
    (tmp_path / "long.toml").write_text(long_enough)
    planned = oltplab("plan", "long.toml", "--stop", "adaptive", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    assert re.search(r"adaptive cells: about \d+ s of 300 s", " ".join(planned.stdout.split()))


@pytest.mark.parametrize(
    ("spec", "options", "message"),
    [
        (
            QUICK.read_text().replace('order = "as-listed"', 'order = "sliced"')
            .replace("measure_seconds = 15", "measure_seconds = 120"),
            ["--stop", "adaptive"],
            'with --stop adaptive: protocol: stop = "adaptive" needs whole cells',
        ),
        (
            QUICK.read_text(),
            ["--block", "tier,tier"],
            "with --block tier,tier: distribute.block: each dimension may be listed once",
        ),
    ],
)  # fmt: skip
def test_plan_options_that_do_not_fit_the_spec_are_bad_input(tmp_path, spec, options, message):
    (tmp_path / "spec.toml").write_text(spec)
    planned = oltplab("plan", "spec.toml", *options, cwd=tmp_path)
    assert_one_line_error(planned, f"spec.toml {message}")
    assert planned.stdout == ""


# Every numeric key of the spec, each given as a quoted number.
QUOTED_NUMBERS = [
    ('[protocol]\nstop_target_pct = "2"\n', "protocol.stop_target_pct", A_NUMBER),
    ('[protocol]\nslice_seconds = "0.25"\n', "protocol.slice_seconds", A_NUMBER),
    ('[protocol]\ntarget_ci_pct = "3"\n', "protocol.target_ci_pct", A_NUMBER),
    ('[dataset]\nrand_pareto_h = "0.5"\n', "dataset.rand_pareto_h", A_NUMBER),
    ('[network]\ndelay_ms = "5"\n', "network.delay_ms", A_NUMBER),
    ('[network]\nrate_mbit = "100"\n', "network.rate_mbit", A_NUMBER),
    ('[network]\nloss_pct = "1"\n', "network.loss_pct", A_NUMBER),
    ('[distribute]\nslow_machine_pct = "10"\n', "distribute.slow_machine_pct", A_NUMBER),
    ('[compare]\nmargin_pct = "5"\n', "compare.margin_pct", A_NUMBER),
    (HOST + 'port = "22"\n', "hosts[0].port", A_WHOLE_NUMBER),
    (
        'workloads = [{name = "mix", read_percent = "80", write_percent = "20"}]\n',
        "workloads[0].read_percent",
        A_WHOLE_NUMBER,
    ),
    # Given alone, the other percentage used to be computed from it: a TypeError, exit 4.
    ('workloads = [{name = "mix", write_percent = "20"}]\n', "workloads[0].write_percent",
     A_WHOLE_NUMBER),
    (
        'workloads = [{name = "oltp_read_only", rand_type = "pareto", rand_pareto_h = "0.5"}]\n',
        "workloads[0].rand_pareto_h",
        A_NUMBER,
    ),
    # Whole numbers written as decimals, true for a number, and no number at all.
    (HOST + "port = 22.0\n", "hosts[0].port", A_WHOLE_NUMBER),
    ('workloads = [{name = "mix", read_percent = 80.0}]\n', "workloads[0].read_percent",
     A_WHOLE_NUMBER),
    ("[config]\nflush_log_at_trx_commit = true\n", "config.flush_log_at_trx_commit",
     A_WHOLE_NUMBER),
    ("[protocol]\nstop_target_pct = true\n", "protocol.stop_target_pct", A_NUMBER),
    ("[network]\nrate_mbit = inf\n", "network.rate_mbit", "expected a finite number"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("section", "key", "expected"), QUOTED_NUMBERS, ids=[k for _, k, _ in QUOTED_NUMBERS]
)
def test_a_quoted_number_is_refused_naming_its_key(tmp_path, section, key, expected):
    # Planned, not run: a spec wrongly accepted is then a failed test, not a benchmark.
    (tmp_path / "bad.toml").write_text(ENGINE + section)
    result = oltplab("plan", "bad.toml", cwd=tmp_path)
    assert_one_line_error(result, f"bad.toml: {key}: {expected}")
    assert result.stdout == ""


def test_a_huge_spec_is_refused_at_once_without_reading_it_all(tmp_path):
    """64 MB of 3 million unknown keys took 47 s and 4 GB before it was refused; now the
    size is checked before the file is parsed, and the memory it takes stays that of any
    other command."""
    huge = tmp_path / "huge.toml"
    with huge.open("w") as out:
        for start in range(0, 3_000_000, 100_000):
            out.write("".join(f"key_{i:07d} = 12345678\n" for i in range(start, start + 100_000)))
    assert huge.stat().st_size > 64 * 10**6
    started = time.monotonic()
    child = start_oltplab("plan", str(huge), cwd=tmp_path)
    assert child.stdout is not None
    # Not left to take its 47 s and 4 GB when the limit is gone.
    stopper = threading.Timer(30, os.kill, (child.pid, signal.SIGKILL))
    stopper.start()
    with child.stdout:
        said = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)  # the child's own peak memory
    stopper.cancel()
    child.returncode = os.waitstatus_to_exitcode(status)
    assert time.monotonic() - started < 10, said
    assert child.returncode == 2, said
    assert said.startswith("error: ") and len(said.strip().splitlines()) == 1, said
    assert str(huge) in said and "over 1,048,576 bytes (1 MiB)" in said, said
    assert usage.ru_maxrss < 400 * 1024, usage.ru_maxrss  # KiB: a bound, not 4 GB


def test_shipped_examples_are_far_below_the_spec_size_limit():
    from oltplab.spec import MAX_SPEC_BYTES

    largest = max(p.stat().st_size for p in (QUICK.parent).glob("*.toml"))
    assert largest * 100 < MAX_SPEC_BYTES


def _calibrated(tmp_path: Path) -> dict[str, str]:
    """A cache with an interleaved calibration of this host, so that --margin plans."""
    (tmp_path / "cache").mkdir()
    entry = {
        "engine": "mariadb-10.11.5",
        "noise_floor_pct": 4.0,
        "round_spread_pct": {"tps": 2.5},
        "cell_seconds": 10,
        "session_overhead_s": 5.0,
    }
    (tmp_path / "cache" / "noise-floor.json").write_text(json.dumps({platform.node(): entry}))
    return {**os.environ, "OLTPLAB_CACHE": str(tmp_path / "cache")}


@pytest.mark.parametrize(
    ("options", "calibrated", "message"),
    [
        (["--margin", "0%"], True, "--margin 0%: expected a percentage above 0"),
        (["--margin", "3%"], False, "this host has no calibration of"),
        (["--margin", "3%", "--measure", "speed"], True, "--measure"),
        (["--measure", "speed"], False, "--measure"),
    ],
)
def test_plan_checks_every_option_before_it_prints(tmp_path, options, calibrated, message):
    spec = tmp_path / "interleaved.toml"
    spec.write_text(QUICK.read_text().replace('order = "as-listed"', 'order = "interleaved"'))
    env = _calibrated(tmp_path) if calibrated else {
        **os.environ, "OLTPLAB_CACHE": str(tmp_path / "empty-cache")
    }  # fmt: skip
    planned = oltplab("plan", str(spec), *options, cwd=tmp_path, env=env)
    assert_one_line_error(planned, message)
    assert planned.stdout == ""
