"""Files in a folder another uid owns: its links are refused, never followed (issue 42, H1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from oltplab.base import nofollow
from oltplab.base.processes import kill_stale
from oltplab.engines.hosts import Host, ServerView

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: links of another uid")

STRANGER = 3_000_000_077  # as a server's uid: no one else's


@pytest.fixture
def root_only(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir(mode=0o700)
    secret = folder / "secret"
    secret.write_text("ROOT-ONLY\n")
    secret.chmod(0o600)
    return secret


@pytest.fixture
def theirs(tmp_path: Path) -> Path:
    """A folder of the stranger's, as a server's work folder is."""
    folder = tmp_path / "work"
    folder.mkdir()
    os.chown(folder, STRANGER, STRANGER)
    return folder


def plant(link: Path, target: Path | str) -> None:
    """A link made by the stranger (root makes it, then gives it away)."""
    link.unlink(missing_ok=True)
    link.symlink_to(target)
    os.chown(link, STRANGER, STRANGER, follow_symlinks=False)


def test_a_link_the_folders_owner_planted_is_refused_as_final_component(root_only, theirs):
    plant(theirs / "mysqld.err", root_only)
    with pytest.raises(nofollow.Refused):
        nofollow.read_bytes(theirs / "mysqld.err")
    assert Host().read_from(theirs / "mysqld.err", 0) == ""
    assert Host().file_size(theirs / "mysqld.err") == 0


def test_a_link_the_folders_owner_planted_is_refused_as_a_parent(root_only, theirs):
    plant(theirs / "datadir", root_only.parent)
    with pytest.raises(nofollow.Refused):
        nofollow.read_bytes(theirs / "datadir" / "secret")
    assert Host().read_from(theirs / "datadir" / "secret", 0) == ""


def test_a_fifo_is_refused_without_blocking(theirs):
    os.mkfifo(theirs / "mysqld.err")
    with pytest.raises(nofollow.Refused):
        nofollow.read_bytes(theirs / "mysqld.err")
    assert Host().read_from(theirs / "mysqld.err", 0) == ""
    # What the server prints replaces it, rather than waiting for a reader.
    os.close(nofollow.create(theirs / "mysqld.err", append=True))
    assert (theirs / "mysqld.err").is_file()


def test_a_hard_link_to_someone_elses_file_is_refused(root_only, theirs):
    os.link(root_only, theirs / "pid")
    with pytest.raises(nofollow.Refused):
        nofollow.read_bytes(theirs / "pid")


def test_writes_replace_a_planted_link_and_leave_its_target_alone(root_only, theirs):
    for name in ("my.cnf", "mysqld.out", "prepare.sysbench.txt"):
        plant(theirs / name, root_only)
    Host().write_text(theirs / "my.cnf", "[mysqld]\n")
    os.close(nofollow.create(theirs / "mysqld.out", append=True))
    os.close(nofollow.create(theirs / "prepare.sysbench.txt"))
    assert root_only.read_text() == "ROOT-ONLY\n"
    assert root_only.stat().st_mode & 0o777 == 0o600
    assert (theirs / "my.cnf").read_text() == "[mysqld]\n"
    assert not any((theirs / n).is_symlink() for n in ("my.cnf", "mysqld.out"))


def test_handing_a_folder_over_leaves_a_hard_linked_file_of_roots_alone(tmp_path, theirs):
    """Issue 58, H-3: a root-owned 0666 file that the uid hard-linked into its folder
    stayed root's; what root wrote there for the server became the server's."""
    roots = tmp_path / "roots-0666"
    roots.write_text("root's\n")
    roots.chmod(0o666)
    os.link(roots, theirs / "planted")
    (theirs / "datadir").mkdir()
    (theirs / "datadir" / "ibdata1").write_text("the server's")
    (theirs / "my.cnf").write_text("[mysqld]\n")
    plant(theirs / "link", roots)
    Host().hand_over([theirs], ServerView(STRANGER, ()))
    assert roots.stat().st_uid == 0 and roots.stat().st_mode & 0o7777 == 0o666
    for handed in ("datadir", "datadir/ibdata1", "my.cnf"):
        assert (theirs / handed).stat().st_uid == STRANGER, handed


def test_links_only_root_or_we_could_make_are_followed(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "file").write_text("ours")
    (tmp_path / "alias").symlink_to("real")
    assert nofollow.read_text(tmp_path / "alias" / "file") == "ours"


def test_a_pid_file_naming_a_process_of_another_uid_kills_nothing(tmp_path, theirs):
    """The server's uid writes its pid file: a planted pid must not make root kill a
    process that is not the server's, even one whose command line holds the marker."""
    marker = str(tmp_path / "my.cnf")
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    try:
        (theirs / "mysqld.pid").write_text(f"{bystander.pid}\n")
        assert not kill_stale(theirs / "mysqld.pid", marker, STRANGER)
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()
