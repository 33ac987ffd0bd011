"""Adaptive repetitions on a real engine."""

import pytest

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
