"""Every next step a command prints is one that can be taken (issue 47, finding 9): each
hint naming an oltplab command parses against the state it was printed for; a one-machine
plan suggests a run, not a scheduler; `gate A A` suggests one report; and the repetitions
said to decide are about as many from a few repetitions as from many."""

from __future__ import annotations

import re
import shlex
import statistics
from pathlib import Path

import numpy as np

from oltplab.analysis.equivalence import equivalence
from oltplab.analysis.estimate import PointSample
from tests.support.cli import oltplab, parse
from tests.support.trees import imported

EXAMPLES = Path(__file__).parents[2] / "examples"
HINT = re.compile(r"oltplab [^;()\n]*")


def hints(said: str) -> list[str]:
    """The oltplab commands on a command's `Next:` lines."""
    found = []
    for line in said.replace("\n  ", " ").splitlines():
        if "Next:" in line:
            found += [
                m.group(0).strip().rstrip(".,") for m in HINT.finditer(line.split("Next:")[1])
            ]
    return found


def test_every_next_step_printed_parses(tmp_path: Path) -> None:
    base = imported(tmp_path, "base", 1)
    slow = imported(tmp_path, "slow", 3, {16: 0.2})
    same = imported(tmp_path, "same", 2)
    spec = EXAMPLES / "quick.toml"
    commands = [
        ("status", base),
        ("status", base, slow),
        ("report", base),
        ("export", base, "--table", "summary"),
        ("gate", base, base),
        ("gate", base, slow),
        ("reproduced", base, slow),
        ("history", base, same, slow, "--engine", "mysql-8.0.45"),
        ("plan", str(spec)),
        ("plan", str(spec), "--shards", "2"),
        ("replay", base),
        ("site", base, slow, "-o", "site"),
    ]
    placeholders = {"DIR": "out", "SPEC": str(spec), "SHARED": "shared", "MERGED": "merged"}
    taken = 0
    for command in commands:
        done = oltplab(*command, cwd=tmp_path)
        assert done.returncode in (0, 1, 5), (command, done.stderr)
        found = hints(done.stdout + "\n" + done.stderr)
        for hint in found:
            words = [placeholders.get(w, w) for w in shlex.split(hint)[1:]]
            words = [re.sub(r"^K/(\d+)$", r"1/\1", w) for w in words]
            parse(words)
            taken += 1
    assert taken >= 9, taken


def test_a_one_machine_plan_suggests_a_run_and_a_sharded_one_a_scheduler(tmp_path: Path) -> None:
    spec = str(EXAMPLES / "quick.toml")
    one = oltplab("plan", spec, cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    assert hints(one.stdout) == [f"oltplab run {spec} --results DIR"], one.stdout
    two = oltplab("plan", spec, "--shards", "2", cwd=tmp_path)
    assert hints(two.stdout)[0].startswith("oltplab submit slurm"), two.stdout


def test_gate_of_a_run_against_itself_suggests_one_report(tmp_path: Path) -> None:
    base = imported(tmp_path, "base", 1)
    gated = oltplab("gate", base, f"./{base}", cwd=tmp_path)
    assert hints(gated.stderr) == [f"oltplab report {base}"], gated.stderr


def sample(rng: np.random.Generator, repetitions: int, spread: float) -> PointSample:
    """Repetitions of 30 s around 1000 tps, their means `spread` apart (a share)."""
    return PointSample(
        {
            r: rng.normal(rng.normal(1000.0, 1000.0 * spread), 10.0, 30)
            for r in range(1, repetitions + 1)
        }
    )


def median_needed(repetitions: int, spread: float, margin: float) -> float:
    said = []
    for seed in range(200):
        rng = np.random.default_rng(seed)
        a, b = sample(rng, repetitions, spread), sample(rng, repetitions, spread)
        needed = equivalence(a, b, margin, paired=False).needed
        if needed:
            said.append(needed)
    return statistics.median(said)


def test_the_repetitions_said_to_decide_do_not_grow_with_fewer_repetitions() -> None:
    """The same spread seen through 3 repetitions and through 30: the count that would
    decide is an estimate of one quantity, so its typical value must not depend on how
    few repetitions it was read from (a small count's wide t quantile is not spread)."""
    few, many = median_needed(3, 0.03, 2.0), median_needed(30, 0.03, 2.0)
    assert 0.8 <= few / many <= 1.25, (few, many)
