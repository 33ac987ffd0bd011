"""A PostgreSQL endpoint: a server started outside oltplab, measured over the PostgreSQL
protocol as the role its operator made, its password read from a file."""

from __future__ import annotations

import pytest

from .conftest import oltplab
from .foreign_postgres import (
    SUPERUSER_PASSWORD,
    assert_measured_without_leaks,
    endpoint_spec,
    password_file,
    postgres_server,
)

pytestmark = pytest.mark.engine


def test_postgresql_endpoint_is_measured_as_its_role(tmp_path):
    with postgres_server(tmp_path / "theirs") as (host, port):
        assert_measured_without_leaks(tmp_path, host, port)


def test_a_refused_password_or_a_superuser_is_one_line_exit_2_and_nothing_created(tmp_path):
    with postgres_server(tmp_path / "theirs") as (host, port):
        spec = endpoint_spec(tmp_path, host, port, password_file(tmp_path, "not-theirs-9d4"))
        refused = oltplab("run", spec.name, "-r", "out", cwd=tmp_path)
        secret = password_file(tmp_path, SUPERUSER_PASSWORD)
        spec = endpoint_spec(tmp_path, host, port, secret, user="postgres")
        superuser = oltplab("run", spec.name, "-r", "out", cwd=tmp_path)
    for done, said in ((refused, "refused the login"), (superuser, "is a superuser")):
        assert done.returncode == 2, done.stdout + done.stderr
        [line] = done.stderr.strip().splitlines()
        assert "theirs" in line and said in line, line
        assert "not-theirs-9d4" not in done.stdout + done.stderr
        assert SUPERUSER_PASSWORD not in done.stdout + done.stderr
    assert not (tmp_path / "out").exists()
