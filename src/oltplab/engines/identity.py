"""A database server started as a host uid of its own, when oltplab runs as root.

Mapping root to `nobody` in a user namespace took away the server's capabilities but left it
uid 0 on the host, and the kernel lets a process signal any process of its own host uid:
root's. So the server runs as a uid nothing else has (SERVER_UID_BASE plus a number from
its work folder, so two instances do not share one either), owning its work folder.

Such a uid cannot walk through root's private folders (/root, a 0700 temporary folder) to
reach its datadir, socket and binaries. This script, run as root just before the server,
gives the server a private view of the filesystem: in a mount namespace of its own, each
folder on the way that others may not enter is covered by an empty tmpfs, and the server's
folders are bound back at their own paths. Everything else it could see stays as it is;
what it sees of root's folders is its own and nothing more. It then drops to the uid and
executes the server, which keeps this process's pid.

The copies of /etc/passwd and /etc/group that name the uid are written in a folder of
root's own and bound over the originals before it is removed: in the server's work folder,
a link its uid planted would have had root write through it.

`--end UID` ends every process of the uid, however detached: no process of the server's
outlives its session, to plant links in its folders before the next.

It is a standalone script (no oltplab imports) so that it runs the same on an SSH host:
`python3 identity.py '{"uid": ..., "folders": [...]}' SERVER ARGS...`, or
`python3 identity.py --end UID`.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import stat
import sys
import tempfile
import time
from pathlib import Path

# Far above the ranges distributions hand out to users (1000 on) and to containers'
# subordinate ids (100000 on, 65536 each).
SERVER_UID_BASE = 3_000_000_000
SERVER_UID_SPREAD = 65536
USER_NAME = "oltplab-server"
END = "--end"

_CLONE_NEWNS = 0x00020000
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_PR_SET_PDEATHSIG = 1
_PR_GET_PDEATHSIG = 2


def server_uid(key: str) -> int:
    """The uid of the instance whose work folder hashes to `key` (hex)."""
    return SERVER_UID_BASE + int(key[:8], 16) % SERVER_UID_SPREAD


def closed_ancestor(folder: Path) -> Path | None:
    """The outermost folder on the way to `folder` that other users may not enter."""
    for ancestor in reversed(folder.parents):
        if not os.stat(ancestor).st_mode & stat.S_IXOTH:
            return ancestor
    return None


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _name_uid(libc: ctypes.CDLL, uid: int) -> None:
    """/etc/passwd and /etc/group with the server's uid in them, in this namespace: a
    server that looks itself up (PostgreSQL's initdb and postgres do) finds a name."""
    lines = {
        "/etc/passwd": f"{USER_NAME}:x:{uid}:{uid}:oltplab server:/nonexistent:/bin/false",
        "/etc/group": f"{USER_NAME}:x:{uid}:",
    }
    # Root's own 0700 folder: nobody else can put anything where the copies are written.
    # A bound file stays when its name goes, so nothing is left behind.
    folder = Path(tempfile.mkdtemp(prefix="oltplab-accounts."))
    try:
        for system, line in lines.items():
            copy = folder / Path(system).name
            copy.write_text(Path(system).read_text().rstrip("\n") + f"\n{line}\n")
            copy.chmod(0o644)
            _check(
                libc.mount(os.fsencode(copy), os.fsencode(system), None, _MS_BIND, None),
                f"bind {system}",
            )
    finally:
        shutil.rmtree(folder)


def enter(uid: int, folders: list[Path]) -> None:
    """This process, in a mount namespace where only `folders` of root's private ones can
    be reached and the uid has a name, as `uid`."""
    libc = ctypes.CDLL(None, use_errno=True)
    _check(libc.unshare(_CLONE_NEWNS), "unshare the mount namespace")
    # Nothing mounted here may show in the host's namespace.
    _check(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "make mounts private")
    _name_uid(libc, uid)
    covered = {a for folder in folders if (a := closed_ancestor(folder)) is not None}
    # Held open while their paths are covered, then bound back through /proc/self/fd.
    held = {
        folder: os.open(folder, os.O_PATH)
        for folder in folders
        if any(folder.is_relative_to(a) for a in covered)
    }
    for ancestor in sorted(covered):
        _check(
            libc.mount(b"oltplab", os.fsencode(ancestor), b"tmpfs", 0, b"mode=0755"),
            f"cover {ancestor}",
        )
    os.umask(0o022)
    for folder, descriptor in held.items():
        folder.mkdir(parents=True, exist_ok=True)
        source = os.fsencode(f"/proc/self/fd/{descriptor}")
        _check(
            libc.mount(source, os.fsencode(folder), None, _MS_BIND | _MS_REC, None),
            f"bind {folder}",
        )
        os.close(descriptor)
    # A change of uid clears the signal the kernel sends when oltplab dies: set it again,
    # and stop here if oltplab died meanwhile.
    death_signal = ctypes.c_int(0)
    _check(libc.prctl(_PR_GET_PDEATHSIG, ctypes.byref(death_signal)), "read the death signal")
    parent = os.getppid()
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if death_signal.value:
        _check(libc.prctl(_PR_SET_PDEATHSIG, death_signal.value), "set the death signal")
        if os.getppid() != parent:
            sys.exit(1)


def _processes_of(uid: int) -> list[int]:
    """The live processes whose real, effective, saved or filesystem uid is uid."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = dict(
                line.split(":", 1)
                for line in Path(f"/proc/{entry}/status").read_text().splitlines()
            )
        except (OSError, ValueError):
            continue  # ended meanwhile
        # A zombie holds nothing and can do nothing; its parent reaps it.
        if uid in map(int, fields["Uid"].split()) and not fields["State"].strip().startswith("Z"):
            found.append(int(entry))
    return found


def end(uid: int, timeout: float = 60) -> None:
    """Every process of uid killed, until none is left: SIGKILL to all of them at once, from
    a child that takes the uid (kill(-1) as uid reaches exactly the uid's processes, and
    those it forks meanwhile on the next round)."""
    deadline = time.monotonic() + timeout
    while _processes_of(uid):
        if time.monotonic() > deadline:
            raise OSError(f"processes of uid {uid} still running after {timeout:.0f} s")
        child = os.fork()
        if child == 0:
            try:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(child, 0)
        time.sleep(0.05)


def main(arguments: list[str]) -> None:
    if arguments[0] == END:
        end(int(arguments[1]))
        return
    wanted = json.loads(arguments[0])
    command = arguments[1:]
    try:
        enter(int(wanted["uid"]), [Path(f) for f in wanted["folders"]])
        os.execvp(command[0], command)
    except OSError as problem:
        print(
            f"oltplab: cannot start {command[0]} as uid {wanted['uid']}: {problem} (its "
            "binaries must be readable, and their folders enterable, by other users)",
            file=sys.stderr,
        )
        sys.exit(126)


if __name__ == "__main__":
    main(sys.argv[1:])
