"""A release whose repetitions disagree: a change point never lies inside its repetitions,
and the repetition that stands apart is named (issue 60: a real PostgreSQL series, one
repetition at 852 TPS where its others gave about 240, ended report, site and export with
an index error)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from oltplab.analysis.changepoints import change_points
from oltplab.analysis.changes import changes_along, outlying_repetitions
from oltplab.analysis.estimate import PointSample

SECONDS = 5


def sample(means: list[float], rng: random.Random) -> PointSample:
    return PointSample(
        {rep: np.array([m + rng.gauss(0, m * 0.01) for _ in range(SECONDS)])
         for rep, m in enumerate(means, start=1)}
    )  # fmt: skip


def series_with_an_outlier(
    releases: int, repetitions: int, position: int, factor: float, seed: int
) -> list[list[float]]:
    rng = random.Random(seed)
    means = [[240 * rng.uniform(0.97, 1.03) for _ in range(repetitions)] for _ in range(releases)]
    release, repetition = divmod(position, repetitions)
    means[release][repetition] *= factor
    return means


@pytest.mark.parametrize("releases", [3, 4, 6])
@pytest.mark.parametrize("repetitions", [2, 3, 5])
@pytest.mark.parametrize("factor", [0.25, 3.55])
def test_an_outlier_at_every_position_gives_changes_between_releases_only(
    releases: int, repetitions: int, factor: float
) -> None:
    names = [f"r{n}" for n in range(1, releases + 1)]
    for position in range(releases * repetitions):
        for seed in range(4):
            means = series_with_an_outlier(releases, repetitions, position, factor, seed)
            rng = random.Random(seed)
            samples = [sample(m, rng) for m in means]
            for after, change in changes_along("pg", ("s", "t", 1), names, samples):
                assert 0 < after < releases
                assert (change.last_good, change.first_changed) == (names[after - 1], names[after])


def test_grouped_change_points_lie_where_groups_meet() -> None:
    rng = random.Random(7)
    for _ in range(300):
        groups = [rng.randint(1, 5) for _ in range(rng.randint(3, 7))]
        values = [rng.choice([240.0, 852.0]) + rng.gauss(0, 3) for _ in range(sum(groups))]
        edges = set(np.cumsum(groups)[:-1].tolist())
        assert {p.index for p in change_points(values, groups=groups)} <= edges


def test_the_repetition_that_stands_apart_is_named_and_agreeing_ones_are_not() -> None:
    rng = random.Random(3)
    assert [o.repetition for o in outlying_repetitions(sample([240, 852, 238], rng))] == [2]
    # Repetitions that differ as a busy host makes them differ, one a little further out.
    assert outlying_repetitions(sample([240, 244, 238, 252], rng)) == []
    assert outlying_repetitions(sample([240, 241, 246], rng)) == []
    # Two repetitions cannot say which of them is the odd one.
    assert outlying_repetitions(sample([240, 852], rng)) == []
    # Many repetitions: the robust distance from the median decides; where most are at the
    # median (no spread by the median's rule), the mean deviation stands in.
    many = [240.0 + rng.gauss(0, 4) for _ in range(14)]
    assert [o.repetition for o in outlying_repetitions(sample([*many, 300], rng))] == [15]
    flat = PointSample({r: np.full(3, 600.0 if r == 12 else 240.0) for r in range(1, 13)})
    assert [o.repetition for o in outlying_repetitions(flat)] == [12]
