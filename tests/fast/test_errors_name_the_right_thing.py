"""An error names what is wrong as it is: a device given as a tarball is no missing file, a
basedir without a server is named itself, not some file the search met below it, and a
value the user gave is echoed at a length one can read."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.cli import oltplab

# A tiny dataset: the default's 48 GB would be refused first on a fuller disk.
TINY = "[dataset]\ntables = 1\ntable_size = 1000\n"


def one_line(result, code: int = 2) -> str:
    assert result.returncode == code, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    return line


@pytest.mark.parametrize(
    ("tarball", "said"),
    [
        (
            "/dev/zero",
            "tarball /dev/zero: not a regular file, so not a tarball; give the release's",
        ),
        ("/proc", "tarball /proc: a folder, not a tarball; give an unpacked release as basedir"),
    ],
)
def test_a_tarball_that_is_no_regular_file_is_named_so(tmp_path, tarball, said):
    (tmp_path / "t.toml").write_text(
        f'engines = [{{name = "x", source = {{tarball = "{tarball}"}}}}]\n' + TINY
    )
    line = one_line(oltplab("run", "t.toml", "-r", "out", cwd=tmp_path))
    assert said in line, line
    assert "no such file" not in line
    assert not (tmp_path / "out").exists()


def test_a_basedir_without_a_server_names_the_basedir_given(tmp_path):
    (tmp_path / "b.toml").write_text(
        'engines = [{name = "x", source = {basedir = "/proc"}}]\n' + TINY
    )
    line = one_line(oltplab("run", "b.toml", "-r", "out", cwd=tmp_path))
    assert line.startswith("error: engine x: basedir /proc holds no server binary (bin/mysqld"), (
        line
    )
    assert "give the folder of an unpacked release" in line
    assert "/proc/" not in line  # no file the search met below it
    assert not (tmp_path / "out").exists()


def test_a_megabyte_value_is_echoed_cut_with_its_length(tmp_path):
    huge = "a" * 1_000_000
    (tmp_path / "n.toml").write_text(f'engines = [{{name = "{huge}"}}]\n')
    line = one_line(oltplab("run", "n.toml", "-r", "out", cwd=tmp_path))
    assert line.startswith("error: n.toml: engines[0].name: String should have at most 64 ")
    assert line.endswith(f"(got '{'a' * 80}'... (1,000,000 characters))")
    # A key the user wrote is cut the same way (a spec holds 1 MiB at most).
    huge = "a" * 500_000
    (tmp_path / "k.toml").write_text(
        f'engines = [{{name = "mariadb-debian"}}]\n[protocol]\n{huge} = 1\n'
    )
    line = one_line(oltplab("run", "k.toml", "-r", "out", cwd=tmp_path))
    assert line == (
        f"error: k.toml: protocol.'{'a' * 80}'... (500,000 characters): unknown key; "
        "remove it or check its spelling"
    )
    # A check that echoes the value itself in its message (one line, no control characters).
    (tmp_path / "c.toml").write_text(
        f'engines = [{{name = "x", source = {{tarball = "/{huge}\\t"}}}}]\n'
    )
    line = one_line(oltplab("run", "c.toml", "-r", "out", cwd=tmp_path))
    assert "must be one line without control characters (got '/aaa" in line
    assert len(line) < 250, len(line)
    assert not (tmp_path / "out").exists()


# Run in a mount namespace of its own: a 64 KiB tmpfs that another uid (as a server's) fills,
# then client.cnf written there as the engines write it; what was raised, as JSON.
_FILLED_THEN_CLIENT_CNF = """
import json, os, subprocess, sys
from pathlib import Path
from oltplab.base.errors import OltplabError
from oltplab.engines.hosts import Host, PrivateFile
disk = Path(sys.argv[1])
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=1777", "tmpfs", str(disk)], check=True)
vault = disk / "work" / "vault"
vault.mkdir(parents=True)
# The folders above are root's 0700 pytest folders: the file is opened first, as a server's
# datadir is handed over to its uid, which then writes until the disk is full.
datadir = os.open(disk / "datadir", os.O_WRONLY | os.O_CREAT, 0o600)
os.fchown(datadir, 3_000_000_123, 3_000_000_123)
if os.fork() == 0:
    os.setgid(3_000_000_123)
    os.setuid(3_000_000_123)
    try:
        os.write(datadir, bytes(1 << 20))
    finally:
        os._exit(0)
os.wait()
os.close(datadir)
try:
    with PrivateFile(Host(), vault / "client.cnf", "[client]\\npassword=x\\n").present():
        said = {"error": None}
except OltplabError as exc:
    said = {"error": type(exc).__name__, "exit": exc.exit_code, "message": str(exc)}
said["left"] = sorted(p.name for p in vault.iterdir())
print(json.dumps(said))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_disk_another_uid_filled_is_said_full_not_blamed_on_client_cnf(tmp_path):
    (tmp_path / "disk").mkdir()
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-c",
         _FILLED_THEN_CLIENT_CNF, str(tmp_path / "disk")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert (said["error"], said["exit"]) == ("DiskFull", 3), said
    disk = tmp_path / "disk"
    assert said["message"] == (
        f"no space left on the device: the filesystem mounted at {disk}, which holds "
        f"{disk}/work/vault, is full (0 B free); free some space there, then run the same "
        "command again: nothing stored is lost"
    )
    assert said["left"] == []  # no half-written secret, no scratch file
