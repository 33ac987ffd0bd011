"""Unpacking a tar archive so that nothing lands outside its folder, on every Python 3.11:
the standard library's extraction filters where this Python has them (3.11.4 on), and the
same refusals made here where it has not (Debian 12's 3.11.2, as in the Kubernetes image)."""

from __future__ import annotations

import os
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

Kind = Literal["data", "tar"]  # the standard library's names for its two filters


def extract(archive: tarfile.TarFile, into: Path, kind: Kind) -> None:
    """ "data": plain files, folders and links that stay inside, owned by us; "tar": as a tar
    tool would, but nothing outside the folder and no set-id or world-writable bits."""
    if hasattr(tarfile, "data_filter"):
        archive.extractall(into, filter=kind)
    else:
        archive.extractall(into, members=checked(archive, into, kind))


def checked(
    members: Iterator[tarfile.TarInfo] | tarfile.TarFile, into: Path, kind: Kind
) -> Iterator[tarfile.TarInfo]:
    """The members, each refused (TarError) where the filter of that kind would refuse it."""
    root = into.resolve()
    for member in members:
        name = member.name.lstrip("/") if kind == "tar" else member.name
        if os.path.isabs(name) or not (root / name).resolve().is_relative_to(root):
            raise tarfile.TarError(f"{member.name}: would be written outside {into}")
        if member.issym() or member.islnk():
            base = root if member.islnk() else (root / name).parent
            if os.path.isabs(member.linkname) and kind == "data":
                raise tarfile.TarError(f"{member.name}: links to an absolute path")
            if not (base / member.linkname).resolve().is_relative_to(root) and (
                kind == "data" or member.islnk()
            ):
                raise tarfile.TarError(f"{member.name}: links outside {into}")
        elif not (member.isfile() or member.isdir()) and kind == "data":
            raise tarfile.TarError(f"{member.name}: a device or pipe, not data")
        member.name = name
        member.mode &= ~(stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | stat.S_IWGRP | stat.S_IWOTH)
        if kind == "data":
            member.uid, member.gid, member.uname, member.gname = os.getuid(), os.getgid(), "", ""
        yield member
