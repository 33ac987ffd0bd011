"""Issue 42, H1: links the server's own uid plants in its work folder lead root nowhere, and
nothing that uid starts outlives the run."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import start_oltplab
from tests.support.doors import host_uid
from tests.support.engines import NO_ENGINE_SUMMARY, cells, processes_using, spec_text, wait_for

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the server has a uid of its own only as root"),
]

ENGINE = "mariadb-10.11.5"
# What the server reads, that root used to write through a link in the work folder.
WRITTEN = ("passwd.server", "group.server", "my.cnf")
TOKEN = "ROOT-ONLY-H1-8d1f3c"


def as_uid(uid: int, folder: Path, act: Callable[[int], None]) -> None:
    """act(descriptor of folder) in a child running as uid alone, as the server would: the
    folder is opened as root first, since its parents are root's 0700 folders."""
    child = os.fork()
    if child == 0:
        code = 1
        try:
            descriptor = os.open(folder, os.O_PATH | os.O_DIRECTORY)
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            act(descriptor)
            code = 0
        finally:
            os._exit(code)
    assert os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0


def plant(descriptor: int, names: tuple[str, ...], target: Path) -> None:
    for name in names:
        try:
            if os.readlink(name, dir_fd=descriptor) == str(target):
                continue
        except OSError:
            pass
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=descriptor)
        os.symlink(target, name, dir_fd=descriptor)


def leave_planter(uid: int, work: Path, target: Path) -> int:
    """A detached process of the uid (new session, parent gone) that keeps planting links
    to target in the work folder; its pid."""
    reading, writing = os.pipe()

    def detach(descriptor: int) -> None:
        os.setsid()
        if (grandchild := os.fork()) != 0:
            os.write(writing, str(grandchild).encode())
            return
        os.close(writing)  # the test reads the pid until the pipe's end
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                plant(descriptor, WRITTEN, target)
            time.sleep(0.1)

    as_uid(uid, work, detach)
    os.close(writing)
    with os.fdopen(reading) as said:
        return int(said.read())


def running(pid: int) -> bool:
    """Whether pid is a live process (a zombie waits for a parent that may never reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def processes_of(uid: int) -> list[int]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if running(int(entry)) and host_uid(int(entry)) == uid:
                found.append(int(entry))
        except (OSError, ValueError):
            continue
    return found


def holding(results: Path, token: str) -> list[Path]:
    """Regular files under results (links not followed) whose content holds token."""
    found = []
    for folder, _, names in os.walk(results):
        for name in names:
            path = Path(folder) / name
            if stat.S_ISREG(path.lstat().st_mode) and token.encode() in path.read_bytes():
                found.append(path)
    return found


def test_links_the_server_uid_plants_change_no_root_file_and_copy_no_root_content(tmp_path):
    secret_folder = tmp_path / "root-only"
    secret_folder.mkdir(mode=0o700)
    secret = secret_folder / "secret"
    # Longer than the error log, so that reading it from the log's offset would copy it.
    secret.write_text(f"{TOKEN}\n" * 20000)
    secret.chmod(0o600)
    before = (secret.read_bytes(), secret.stat().st_mode, secret.stat().st_uid)

    results, work = tmp_path / "out", tmp_path / "out" / ".work" / ENGINE
    spec = tmp_path / "s.toml"
    workload = ("oltp_read_only",)
    spec.write_text(spec_text([ENGINE], threads=[1], measure=2, warmup=0, workloads=workload))
    planter = None
    try:
        run = start_oltplab("run", "s.toml", "--results", "out", *NO_ENGINE_SUMMARY, cwd=tmp_path)

        def started() -> bool:
            return run.poll() is not None or any(c["status"] == "running" for c in cells(results))

        wait_for(started, 600, "the first cell")
        assert run.poll() is None, run.communicate()[0]
        # The run held still (SIGSTOP) while the links are planted: they are in place
        # before the session ends (and root copies the error log), however slow the host.
        os.kill(run.pid, signal.SIGSTOP)
        try:
            cnf = str(work / "my.cnf")
            wait_for(lambda: processes_using(cnf) != [], 60, "the cell's server")
            uid = host_uid(processes_using(cnf)[0])
            assert uid not in (0, os.getuid())
            # Read: the error log the cell's server writes becomes a link to the root file.
            as_uid(uid, work, lambda d: plant(d, ("mysqld.err",), secret))
            planter = leave_planter(uid, work, secret)
        finally:
            os.kill(run.pid, signal.SIGCONT)
        first = run.communicate(timeout=300)[0], run.returncode
        outlived = processes_of(uid)

        # Write: between the sessions, the files the server reads become links to it too.
        as_uid(uid, work, lambda d: plant(d, WRITTEN, secret))
        as_uid(uid, work, lambda d: os.unlink("mysqld.err", dir_fd=d))
        spec.write_text(
            spec_text([ENGINE], threads=[1, 2], measure=2, warmup=0, workloads=workload)
        )
        if running(planter):
            os.kill(planter, signal.SIGKILL)
        planter = leave_planter(uid, work, secret)
        again = start_oltplab("run", "s.toml", "--results", "out", *NO_ENGINE_SUMMARY, cwd=tmp_path)
        second = again.communicate(timeout=300)[0], again.returncode
        outlived += processes_of(uid)
    finally:
        if planter is not None and running(planter):
            os.kill(planter, signal.SIGKILL)

    assert (secret.read_bytes(), secret.stat().st_mode, secret.stat().st_uid) == before
    assert holding(results, TOKEN) == []
    # Each run ended every process of the server's uid, the detached planters included.
    assert outlived == []
    assert first[1] == 0, first[0]
    assert second[1] == 0, second[0]
    assert [c["status"] for c in cells(results)] == ["done", "done"]
