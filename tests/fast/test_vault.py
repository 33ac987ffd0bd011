"""What root reads back or hands to a client lives where the server's uid cannot write, and
no value can add a line to an option file (issue 58, H-1)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from oltplab.base.errors import EngineError
from oltplab.engines.config import client_section
from oltplab.engines.provision import secret
from oltplab.engines.server import CONTROL_SECRET, vault

INJECTED = "pw\nplugin-dir=/tmp/theirs\ndefault-auth=evil"


def test_a_value_with_a_line_break_is_refused_without_being_echoed():
    with pytest.raises(EngineError) as refused:
        client_section({"user": "root", "password": INJECTED})
    assert "password holds a line break" in str(refused.value)
    assert "plugin-dir" not in str(refused.value)


@pytest.mark.skipif(not shutil.which("my_print_defaults"), reason="needs my_print_defaults")
def test_the_client_reads_back_every_value_as_written(tmp_path):
    """Quotes, backslashes, comment characters and spaces stay inside the value, as the
    MySQL family's own option-file reader sees it."""
    values = {"user": "root", "password": "a\"b\\c #d; e'f ", "socket": "/tmp/s s"}
    (tmp_path / "client.cnf").write_text(client_section(values))
    said = subprocess.run(
        ["my_print_defaults", f"--defaults-file={tmp_path / 'client.cnf'}", "client"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert said.splitlines() == [f"--{key}={value}" for key, value in values.items()]


def test_passwords_live_in_a_vault_beside_the_work_folder_that_only_root_enters(tmp_path):
    work = tmp_path / ".work" / "mysql-8.0.31"
    work.mkdir(parents=True)
    made = secret(work, CONTROL_SECRET)
    assert len(made) == 24
    assert (vault(work) / CONTROL_SECRET).read_text() == made
    assert vault(work).parent == work.parent
    assert vault(work).stat().st_mode & 0o777 == 0o700
    assert (vault(work) / CONTROL_SECRET).stat().st_mode & 0o777 == 0o600
    assert secret(work, CONTROL_SECRET) == made


def test_a_password_in_the_work_folder_is_never_read(tmp_path):
    """The server's uid owns the work folder: what it writes there is not a secret."""
    work = tmp_path / "engine"
    work.mkdir()
    (work / CONTROL_SECRET).write_text(INJECTED)
    assert secret(work, CONTROL_SECRET) != INJECTED


def test_a_password_oltplab_did_not_make_is_refused_naming_the_file(tmp_path):
    work = tmp_path / "engine"
    vault(work).mkdir(parents=True, mode=0o700)
    (vault(work) / CONTROL_SECRET).write_text(INJECTED)
    with pytest.raises(EngineError) as refused:
        secret(work, CONTROL_SECRET)
    message = str(refused.value)
    assert str(vault(work) / CONTROL_SECRET) in message and "not a password oltplab made" in message
    assert "plugin-dir" not in message
    assert "\n" not in message


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the server's uid is another")
def test_the_servers_uid_writes_in_its_work_folder_and_not_in_the_vault():
    uid = 3_000_000_077
    # Not under pytest's 0700 folder, so that the uid's only obstacle is the vault's mode.
    base = Path(tempfile.mkdtemp(prefix="oltplab-vault-"))
    try:
        base.chmod(0o755)
        work = base / "engine"
        work.mkdir()
        os.chown(work, uid, uid)
        secret(work, CONTROL_SECRET)

        def write_as_uid(path: Path) -> subprocess.CompletedProcess[str]:
            script = "import sys; open(sys.argv[1], 'w').write('x')"
            return subprocess.run(
                ["python3", "-c", script, str(path)],
                user=uid,
                capture_output=True,
                text=True,
                check=False,
            )

        assert write_as_uid(work / "planted").returncode == 0
        refused = write_as_uid(vault(work) / "planted")
        assert refused.returncode != 0 and "Permission denied" in refused.stderr
    finally:
        shutil.rmtree(base)
