"""An error names what is wrong as it is: a device given as a tarball is no missing file, a
basedir without a server is named itself, not some file the search met below it, and a
value the user gave is echoed at a length one can read."""

from __future__ import annotations

import pytest

from tests.cli import oltplab


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
        f'engines = [{{name = "x", source = {{tarball = "{tarball}"}}}}]\n'
    )
    line = one_line(oltplab("run", "t.toml", "-r", "out", cwd=tmp_path))
    assert said in line, line
    assert "no such file" not in line
    assert not (tmp_path / "out").exists()


def test_a_basedir_without_a_server_names_the_basedir_given(tmp_path):
    (tmp_path / "b.toml").write_text('engines = [{name = "x", source = {basedir = "/proc"}}]\n')
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
