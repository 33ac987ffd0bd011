"""`oltplab engines serve`'s bad input, refused before anything is made: a password that is
not one the families' accounts take, an engine the catalog lacks."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.cli import assert_one_line_error, oltplab


def test_a_password_of_another_form_is_refused_naming_the_variable(tmp_path: Path) -> None:
    env = {**os.environ, "DB_PASSWORD": "short"}
    said = oltplab(
        "engines", "serve", "mariadb-11.4.5", "--datadir", str(tmp_path / "db"),
        "--password-env", "DB_PASSWORD", cwd=tmp_path, env=env,
    )  # fmt: skip
    assert_one_line_error(said, "--password-env DB_PASSWORD: expected 24 characters")
    assert not (tmp_path / "db").exists()


def test_an_engine_the_catalog_lacks_is_refused(tmp_path: Path) -> None:
    env = {**os.environ, "DB_PASSWORD": "A" * 24}
    said = oltplab(
        "engines", "serve", "mariadb-0.1", "--datadir", str(tmp_path / "db"),
        "--password-env", "DB_PASSWORD", cwd=tmp_path, env=env,
    )  # fmt: skip
    assert_one_line_error(said, "engine mariadb-0.1: not in the catalog")
    assert not (tmp_path / "db").exists()
