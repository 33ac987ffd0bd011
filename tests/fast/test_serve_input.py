"""`oltplab engines serve`'s bad input, refused before anything is made: a password that is
not one the families' accounts take, an engine the catalog lacks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.cli import assert_one_line_error, oltplab


@pytest.mark.parametrize(
    ("engine", "password", "said"),
    [
        ("mariadb-11.4.5", "short", "--password-env DB_PASSWORD: expected 24 characters"),
        ("mariadb-0.1", "A" * 24, "engine mariadb-0.1: not in the catalog"),
    ],
    ids=["a password of another form", "an engine the catalog lacks"],
)
def test_bad_input_is_refused_in_one_line_before_anything_is_made(
    tmp_path: Path, engine: str, password: str, said: str
) -> None:
    env = {**os.environ, "DB_PASSWORD": password}
    refused = oltplab(
        "engines", "serve", engine, "--datadir", str(tmp_path / "db"),
        "--password-env", "DB_PASSWORD", cwd=tmp_path, env=env,
    )  # fmt: skip
    assert_one_line_error(refused, said)
    assert not (tmp_path / "db").exists()
