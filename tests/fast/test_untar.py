"""The refusals made where this Python's tarfile has no extraction filters (before 3.11.4,
as Debian 12's 3.11.2 in the Kubernetes image): checked here on any Python."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from oltplab.base.untar import checked, extract


def _archive(*members: tarfile.TarInfo) -> tarfile.TarFile:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for member in members:
            tar.addfile(member, io.BytesIO(b"x" * member.size) if member.isfile() else None)
    raw.seek(0)
    return tarfile.open(fileobj=raw, mode="r")


def _member(
    name: str, kind: bytes = tarfile.REGTYPE, link: str = "", mode: int = 0o644
) -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type, member.linkname, member.mode = kind, link, mode
    member.size = 1 if kind == tarfile.REGTYPE else 0
    return member


@pytest.mark.parametrize(
    ("member", "kind", "refused"),
    [
        (_member("../escape"), "tar", "outside"),
        (_member("/etc/passwd"), "data", "outside"),
        (_member("a", tarfile.SYMTYPE, "/etc/passwd"), "data", "absolute path"),
        (_member("a", tarfile.SYMTYPE, "../../x"), "data", "links outside"),
        (_member("a", tarfile.LNKTYPE, "../x"), "tar", "links outside"),
        (_member("d", tarfile.CHRTYPE), "data", "device"),
    ],
)
def test_what_would_land_outside_is_refused(
    member: tarfile.TarInfo, kind: str, refused: str, tmp_path: Path
) -> None:
    with pytest.raises(tarfile.TarError, match=refused):
        list(checked(_archive(member), tmp_path, kind))  # type: ignore[arg-type]


def test_plain_members_are_unpacked_without_set_id_or_shared_write_bits(tmp_path: Path) -> None:
    archive = _archive(
        _member("dir/file", mode=0o6777), _member("dir/link", tarfile.SYMTYPE, "file")
    )
    (kept,) = [m for m in checked(archive, tmp_path, "data") if m.isfile()]
    assert kept.mode == 0o755
    extract(
        _archive(_member("dir/file"), _member("dir/link", tarfile.SYMTYPE, "file")),
        tmp_path,
        "data",
    )
    assert (tmp_path / "dir" / "link").read_text() == "x"
