"""Endpoints of either protocol, as the spec names them, and what is checked of them before
a run creates anything (the engine tests log in to real servers)."""

from __future__ import annotations

import pytest

from oltplab.base.errors import EngineError
from oltplab.base.wire import MYSQL, POSTGRESQL
from oltplab.engines.endpoint import Endpoint, check_endpoints
from oltplab.engines.hosts import free_port
from oltplab.spec import parse_spec
from tests.support.cli import oltplab


def engine(source: str, family: str = ""):
    said = f'family = "{family}"\n' if family else ""
    return parse_spec(f'[[engines]]\nname = "theirs"\n{said}source = {{ {source} }}\n', "t").engines


def test_a_postgresql_endpoint_is_reached_over_its_own_protocol(tmp_path, monkeypatch):
    monkeypatch.setenv("THEIR_PW", "x")
    source = 'endpoint = "db:5432", user = "bench", password_env = "THEIR_PW"'
    [postgres] = engine(source, "postgresql")
    [unnamed] = engine(source)
    assert Endpoint.of(postgres, tmp_path).client_protocol == POSTGRESQL
    # Without a family, the MySQL protocol's: which of its families, the server says.
    assert Endpoint.of(unnamed, tmp_path).client_protocol == MYSQL


def test_a_password_that_cannot_be_read_stops_the_run_before_it_starts(tmp_path, monkeypatch):
    monkeypatch.delenv("THEIR_PW", raising=False)
    unset = engine('endpoint = "127.0.0.1:1", user = "u", password_env = "THEIR_PW"')
    with pytest.raises(EngineError, match="THEIR_PW is not set"):
        check_endpoints(unset)
    secret = tmp_path / "pw"
    secret.write_text("x\n")
    secret.chmod(0o640)
    shared = engine(f'endpoint = "127.0.0.1:1", user = "u", password_file = "{secret}"')
    with pytest.raises(EngineError, match="readable by others"):
        check_endpoints(shared)


@pytest.mark.parametrize("family", ["mysql", "postgresql"])
def test_an_endpoint_that_does_not_answer_stops_the_run_before_it_creates_anything(
    tmp_path, family
):
    (tmp_path / "pw").write_text("x\n")
    (tmp_path / "pw").chmod(0o600)
    port = free_port()  # nothing listens there
    (tmp_path / "e.toml").write_text(
        f'[[engines]]\nname = "theirs"\nfamily = "{family}"\n'
        f'source = {{ endpoint = "127.0.0.1:{port}", user = "u", password_file = "pw" }}\n'
    )
    result = oltplab("run", "e.toml", "-r", "out", cwd=tmp_path)
    assert result.returncode == 3, result.stdout + result.stderr  # the environment's
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: engine theirs: endpoint 127.0.0.1:{port} cannot be reached (")
    assert line.endswith("start the server, or correct source.endpoint in the spec")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("port", ["0", "99999", "1" + "0" * 5000], ids=["0", "99999", "long"])
def test_a_port_outside_1_to_65535_is_refused_when_the_spec_is_read(tmp_path, port):
    (tmp_path / "e.toml").write_text(
        f'engines = [{{ name = "theirs", source = {{ endpoint = "db:{port}", user = "u" }} }}]\n'
    )
    result = oltplab("run", "e.toml", "-r", "out", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(
        "error: e.toml: engines[0].source.endpoint: expected host:port with a port from 1 to "
        "65,535 (got 'db:"
    )
    assert not (tmp_path / "out").exists()
