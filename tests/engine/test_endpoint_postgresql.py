"""A PostgreSQL endpoint: a server started outside oltplab, measured over the PostgreSQL
protocol as the role its operator made, its password read from a file."""

from __future__ import annotations

import pytest

from oltplab.engines.postgresql import PostgresFamily
from tests.support.cli import oltplab
from tests.support.foreign_postgres import (
    SUPERUSER_PASSWORD,
    assert_measured_without_leaks,
    endpoint_spec,
    password_file,
    postgres_server,
)

ROLE_PASSWORD = "Their-role-pw-3c9e41"


@pytest.fixture(scope="module")
def theirs(tmp_path_factory):
    """One server for the module; each case makes the roles it needs."""
    with postgres_server(tmp_path_factory.mktemp("theirs")) as where:
        yield where


def test_postgresql_endpoint_is_measured_as_its_role(tmp_path, theirs):
    host, port = theirs
    assert_measured_without_leaks(tmp_path, host, port)


def test_a_refused_password_or_a_superuser_is_one_line_exit_2_and_nothing_created(tmp_path, theirs):
    host, port = theirs
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


# A role, what its operator gave it, and what oltplab says of it.
REACHING_ROLES = [
    ("creator", "CREATEROLE", (), "has CREATEROLE (ALTER ROLE creator NOCREATEROLE)"),
    (
        "reader",
        "",
        ("pg_read_server_files",),
        "is a member of pg_read_server_files (REVOKE pg_read_server_files FROM reader",
    ),
    ("writer", "", ("pg_write_server_files",), "is a member of pg_write_server_files"),
    ("runner", "", ("pg_execute_server_program",), "is a member of pg_execute_server_program"),
    # Through a group: pg_has_role follows memberships, as PostgreSQL grants the rights.
    ("grouped", "", ("file_movers",), "is a member of pg_read_server_files"),
]


@pytest.mark.parametrize(
    ("role", "attributes", "grants", "said"), REACHING_ROLES, ids=[r[0] for r in REACHING_ROLES]
)
def test_a_role_that_reaches_the_servers_files_is_refused_like_a_superuser(
    tmp_path, theirs, role, attributes, grants, said
):
    host, port = theirs
    with PostgresFamily.client(host, port, "postgres", SUPERUSER_PASSWORD) as control:
        if "file_movers" in grants:
            control.execute("CREATE ROLE file_movers NOLOGIN IN ROLE pg_read_server_files")
        control.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{ROLE_PASSWORD}' {attributes}")
        for granted in grants:
            control.execute(f"GRANT {granted} TO {role}")
    spec = endpoint_spec(tmp_path, host, port, password_file(tmp_path, ROLE_PASSWORD), role)
    done = oltplab("run", spec.name, "-r", "out", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: engine theirs: role {role} "), line
    assert said in line, line
    assert line.endswith("benchmark with an account whose rights are on its own database only")
    assert ROLE_PASSWORD not in done.stdout + done.stderr
    assert not (tmp_path / "out").exists()
