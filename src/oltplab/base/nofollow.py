"""Files in folders a less trusted identity owns, opened without following its links.

As root, oltplab reads and writes files in folders the database server's own uid owns (its
work folder, datadir, error log): that uid runs third-party binaries, and a link it plants
there would otherwise make root write its files or copy their content where anyone reads
it. Every path here is opened one component at a time from `/`, each with O_NOFOLLOW: a
link is followed only when nobody but root or we could have made it (it is owned by root or
us, in a folder owned by root or us that others may not write unless it is sticky), and
refused anywhere else, final component included. What is read must be a regular file (a
planted FIFO would block), and a file with other names that the folder's owner does not own
is refused too (a hard link to someone else's file).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import PurePath

# As the kernel's own limit on links followed in one lookup.
_MAX_LINKS = 40
_DIRECTORY = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Refused(OSError):
    """A path that a link, or something other than a regular file, stands in."""

    def __init__(self, path: PurePath, why: str) -> None:
        super().__init__(errno.ELOOP, f"not followed: {why}", str(path))


def _trusted(folder: os.stat_result, entry: os.stat_result) -> bool:
    ours = (0, os.geteuid())
    shared = folder.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not folder.st_mode & stat.S_ISVTX
    return folder.st_uid in ours and entry.st_uid in ours and not shared


def _walk(path: PurePath) -> tuple[int, str]:
    """A descriptor of the folder holding path's last component (no link on the way, or
    trusted ones only), and that component's name, which is no trusted link."""
    wanted = list(PurePath(os.path.abspath(path)).parts[1:])
    if not wanted:
        raise IsADirectoryError(errno.EISDIR, "the root folder", str(path))
    folder = os.open("/", _DIRECTORY)
    followed = 0
    try:
        while True:
            name = wanted.pop(0)
            if name in (".", ".."):
                step = os.open(name, _DIRECTORY, dir_fd=folder)
                os.close(folder)
                folder = step
                continue
            try:
                entry = os.stat(name, dir_fd=folder, follow_symlinks=False)
            except FileNotFoundError:
                if wanted:
                    raise
                return folder, name
            if stat.S_ISLNK(entry.st_mode):
                if not _trusted(os.fstat(folder), entry) or followed >= _MAX_LINKS:
                    if not wanted:
                        return folder, name  # O_NOFOLLOW refuses it, or a write replaces it
                    raise Refused(path, f"a link another identity could have made ({name})")
                followed += 1
                target = os.readlink(name, dir_fd=folder)
                if target.startswith("/"):
                    os.close(folder)
                    folder = os.open("/", _DIRECTORY)
                wanted = [p for p in target.split("/") if p] + wanted
                continue
            if not wanted:
                return folder, name
            step = os.open(name, _DIRECTORY, dir_fd=folder)
            os.close(folder)
            folder = step
    except BaseException:
        os.close(folder)
        raise


@contextlib.contextmanager
def _parent(path: PurePath) -> Iterator[tuple[int, str]]:
    folder, name = _walk(path)
    try:
        yield folder, name
    finally:
        os.close(folder)


def _checked(path: PurePath, folder: int, descriptor: int) -> int:
    """descriptor, if it is a regular file that is no hard link to a stranger's file."""
    found = os.fstat(descriptor)
    holder = os.fstat(folder)
    stranger = holder.st_uid not in (0, os.geteuid()) and found.st_uid != holder.st_uid
    if not stat.S_ISREG(found.st_mode) or (stranger and found.st_nlink > 1):
        os.close(descriptor)
        raise Refused(path, "not a regular file of the folder's owner")
    return descriptor


def open_read(path: PurePath) -> int:
    """A descriptor to read path from; Refused for a link or anything but a regular file."""
    with _parent(path) as (folder, name):
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            descriptor = os.open(name, flags, dir_fd=folder)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise Refused(path, "a link") from None
            raise
        return _checked(path, folder, descriptor)


def read_bytes(path: PurePath, offset: int = 0) -> bytes:
    """path's content from a byte offset on."""
    with os.fdopen(open_read(path), "rb") as handle:
        handle.seek(offset)
        return handle.read()


def read_text(path: PurePath) -> str:
    return read_bytes(path).decode()


def size(path: PurePath) -> int:
    """path's size in bytes; 0 when it is missing, a link or not a regular file."""
    try:
        with os.fdopen(open_read(path), "rb") as handle:
            return os.fstat(handle.fileno()).st_size
    except OSError:
        return 0


def write_bytes(path: PurePath, data: bytes, mode: int = 0o644) -> None:
    """path holding data, written beside it and renamed over it: whatever stood at path (a
    link included) is replaced, never written through."""
    with _parent(path) as (folder, name):
        scratch = f".{name}.{secrets.token_hex(6)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        descriptor = os.open(scratch, flags, mode, dir_fd=folder)
        try:
            os.fchmod(descriptor, mode)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(scratch, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(scratch, dir_fd=folder)
            raise


def write_text(path: PurePath, text: str, mode: int = 0o644) -> None:
    write_bytes(path, text.encode(), mode)


def create(path: PurePath, *, append: bool = False, mode: int = 0o644) -> int:
    """A descriptor to write path from its start (or, with append, its end): a link or
    anything but a regular file standing there is removed first, never written through."""
    with _parent(path) as (folder, name):
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        flags |= os.O_APPEND if append else os.O_TRUNC
        if not append:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=folder)
            flags |= os.O_EXCL
        try:
            return _checked(path, folder, os.open(name, flags, mode, dir_fd=folder))
        except OSError as exc:
            # ELOOP: a link; ENXIO: a FIFO nobody reads; Refused: another kind of file.
            if not append or exc.errno not in (errno.ELOOP, errno.ENXIO):
                raise
        os.unlink(name, dir_fd=folder)
        flags |= os.O_EXCL
        return _checked(path, folder, os.open(name, flags, mode, dir_fd=folder))


def hand_over(folder: PurePath, uid: int) -> list[str]:
    """folder and what it holds, owned by uid; returns what was left as it was. The walk
    opens each folder without following links. A file with another name (a hard link) is
    left alone, since the other name may be anyone's file: the uid could have linked it
    in. The ownership is changed through a descriptor whose file was checked, so a name
    swapped meanwhile changes nothing but what was checked."""
    kept: list[str] = []
    for where, subfolders, files, descriptor in os.fwalk(folder, follow_symlinks=False):
        if where == str(folder):
            os.fchown(descriptor, uid, uid)
        for name in [*subfolders, *files]:
            if not _hand_over_entry(name, descriptor, uid):
                kept.append(os.path.join(where, name))
    return kept


def _hand_over_entry(name: str, folder: int, uid: int) -> bool:
    """name, in folder, owned by uid unless it has other names; False when it was kept."""
    try:
        found = os.stat(name, dir_fd=folder, follow_symlinks=False)
        if found.st_uid == uid:
            return True
        if not stat.S_ISREG(found.st_mode):
            # A folder has no other names; a link, socket or FIFO is changed itself, not
            # what it leads to.
            if found.st_nlink > 1 and not stat.S_ISDIR(found.st_mode):
                return False
            os.chown(name, uid, uid, dir_fd=folder, follow_symlinks=False)
            return True
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
        descriptor = os.open(name, flags, dir_fd=folder)
    except FileNotFoundError:
        return True
    except OSError:
        return False  # changed since it was looked at: left as it is
    try:
        opened = os.fstat(descriptor)
        if not stat.S_ISREG(opened.st_mode) or opened.st_nlink > 1:
            return False
        os.fchown(descriptor, uid, uid)
        return True
    finally:
        os.close(descriptor)
