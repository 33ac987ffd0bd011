"""Outputs written whole: a report, a site, files that go together; and what they may replace.

Such a folder is many files written one after another; a reader must never find some of
them new and some missing or old. So the folder is written under a temporary name beside
its own, and renamed into place only once every file is in it: the old folder is renamed
aside, the new one renamed in, the old one removed. A kill leaves the old folder, or none,
under the real name, and a temporary one beside it that the next run clears.

A marker file lists each file oltplab wrote in a folder, the command that wrote it and its
digest: only those are oltplab's to replace. A folder written whole is replaced only when
it holds nothing else and none of them changed since (checked before anything is written,
and again once it is renamed aside, where nobody adds to it): a file added, changed or put
where one of them was is the user's, and the command is refused naming it. Files written
into a folder among others (the gate's) replace only their own, listed and unchanged.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import secrets
import shutil
import stat
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from oltplab.base.errors import OltplabError
from oltplab.base.processes import pid_alive
from oltplab.store.directory import OUTPUT_MARKER as MARKER
from oltplab.store.files import (
    check_output_file,
    os_problem,
    sha256_file,
    sync_folder,
    write_atomic,
    write_whole,
)

_PARTIAL, _OLD = "partial", "old"

# A file's place in its folder (`charts/a.png`) -> the command that wrote it and its digest.
Listing = dict[str, tuple[str, str]]
_NOT_WRITTEN, _CHANGED = "oltplab did not write it", "it changed since oltplab wrote it"


def _listing(folder: Path) -> Listing | None:
    """What the folder's marker lists (nothing when it has none); None for a marker that
    lists no file (an older oltplab's, which named only the command) or is unreadable."""
    try:
        found = json.loads((folder / MARKER).read_bytes())["files"]
        return {name: (str(kind), str(digest)) for name, (kind, digest) in found.items()}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _marker(listing: Listing) -> str:
    return json.dumps({"files": dict(sorted(listing.items()))}, indent=1) + "\n"


def _unlisted(path: Path, name: str, listing: Listing, kind: str) -> str | None:
    """Why the file at `path` is not one this `kind` may replace, if it is not."""
    listed = listing.get(name)
    if listed is None or listed[0] != kind:
        return _NOT_WRITTEN
    try:
        regular = stat.S_ISREG(path.lstat().st_mode)
    except OSError as exc:
        raise os_problem(exc, path) from None
    # A link or a folder where a file was is the user's, whatever it leads to.
    return None if regular and sha256_file(path) == listed[1] else _CHANGED


def _stranger(folder: Path, listing: Listing, kind: str) -> tuple[str, str] | None:
    """The first entry of `folder` that a `kind` written whole over it would lose (any not
    listed as that kind's, or changed since), and why; None when every one may go."""
    holding = {Path(name).parent.as_posix() for name in listing}
    for root, folders, files in os.walk(folder):
        here = Path(root)
        # A link to a folder is an entry of its own, never walked into.
        links = [name for name in folders if (here / name).is_symlink()]
        folders[:] = sorted(set(folders) - set(links))
        for name in sorted(files + links):
            place = (here / name).relative_to(folder).as_posix()
            if place != MARKER and (why := _unlisted(here / name, place, listing, kind)):
                return place, why
        for name in folders:
            place = (here / name).relative_to(folder).as_posix()
            if not any(h == place or h.startswith(place + "/") for h in holding):
                return place + "/", _NOT_WRITTEN
    return None


def _check_ours(folder: Path, shown: Path, kind: str) -> None:
    """Refused unless `folder` (said as `shown`) is a folder, not a link, and everything in
    it is this `kind`'s to replace."""
    if folder.is_symlink():
        # Replacing it would replace the link, and leave the folder it leads to as it was.
        raise OltplabError(
            f"--output {shown}: is a symbolic link (to {os.readlink(folder)}); the {kind} "
            "replaces the folder it is given: give the folder itself, or another --output"
        )
    listing = _listing(folder)
    stranger = _stranger(folder, listing or {}, kind)
    if stranger is None:
        return
    name, why = stranger
    if listing is None:
        raise OltplabError(
            f"--output {shown}: its {MARKER} does not list the files oltplab wrote (an older "
            f"oltplab's), so {name} may be yours; remove the folder, or give another --output"
        )
    raise OltplabError(
        f"--output {shown}: holds {name}, and {why}"
        + (f" as a {kind}" if why == _NOT_WRITTEN else "")
        + "; move it out of the folder, or give another --output"
    )


def check_output_folder(folder: Path, kind: str, inputs: Sequence[Path] = ()) -> None:
    """A folder `kind` may be written to, in place of what it holds: not a file or a link,
    apart from the results folders it reads, and empty or holding only what a `kind`
    wrote there before, as it was written."""
    if folder.exists() and not folder.is_dir():
        raise OltplabError(f"--output {folder}: is a file; the {kind} needs a folder")
    where = folder.resolve()
    for given in inputs:
        read = given.resolve()
        if where == read or where.is_relative_to(read) or read.is_relative_to(where):
            raise OltplabError(
                f"--output {folder}: overlaps the results folder {given} it reads; "
                f"give a folder outside it for the {kind}"
            )
    if folder.is_dir() or folder.is_symlink():
        _check_ours(folder, folder, kind)


def check_beside(folder: Path, kind: str, names: Sequence[str]) -> Listing:
    """Files a `kind` may write into `folder` among others: each name free, or holding the
    file the `kind` wrote there before, as it was written. The folder's listing."""
    listing = _listing(folder) or {}
    for name in names:
        path = folder / name
        check_output_file(path)
        if (path.exists() or path.is_symlink()) and (why := _unlisted(path, name, listing, kind)):
            raise OltplabError(
                f"{path}: {why}"
                + (f" as the {kind}'s" if why == _NOT_WRITTEN else "")
                + ", and this would replace it; move it away, or write elsewhere with -o"
            )
    return listing


def write_beside(folder: Path, kind: str, files: Mapping[str, str]) -> None:
    """These files of a `kind` written into `folder` among others (check_beside's rule),
    and listed in its marker as the `kind`'s."""
    listing = check_beside(folder, kind, list(files))
    data = {name: text.encode() for name, text in files.items()}
    for name, written in data.items():
        listing[name] = (kind, hashlib.sha256(written).hexdigest())
    write_whole(
        {**{folder / n: d for n, d in data.items()}, folder / MARKER: _marker(listing).encode()}
    )


def check_replaceable(path: Path, start: bytes, kind: str) -> None:
    """An output file oltplab may write: none there yet, or one beginning as its `kind`
    begins (one oltplab wrote before)."""
    check_output_file(path)
    try:
        with path.open("rb") as handle:
            found = handle.read(len(start))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise os_problem(exc, path) from None
    if found != start:
        raise OltplabError(
            f"{path}: not a {kind} oltplab wrote, and this would replace it; move it away, "
            "or write elsewhere with -o"
        )


def _temporary(folder: Path, what: str) -> Path:
    return folder.with_name(f".{folder.name}.{what}-{os.getpid()}-{secrets.token_hex(4)}")


def is_temporary(name: str) -> bool:
    """Whether a file name is one of an output being written, or of one a kill left."""
    return name.startswith(".") and any(f".{what}-" in name for what in (_PARTIAL, _OLD))


def _clear_leftovers(folder: Path) -> None:
    """The temporary folders of runs killed before they renamed theirs (of a live run, kept)."""
    for what in (_PARTIAL, _OLD):
        for found in folder.parent.glob(f".{glob.escape(folder.name)}.{what}-*"):
            pid = found.name.rsplit("-", 2)[-2]
            if pid.isdigit() and not pid_alive(int(pid)):
                shutil.rmtree(found, ignore_errors=True)


def _written(folder: Path, kind: str) -> Listing:
    """Every file in `folder`, as this `kind`'s."""
    return {
        (Path(root) / name).relative_to(folder).as_posix(): (kind, sha256_file(Path(root) / name))
        for root, _, files in os.walk(folder)
        for name in files
    }


@contextmanager
def whole_folder(folder: Path, kind: str, inputs: Sequence[Path] = ()) -> Iterator[Path]:
    """A new empty folder to write the `kind` into; when the block ends without an error it
    replaces `folder` whole, else it is removed and `folder` is left as it was."""
    check_output_folder(folder, kind, inputs)
    shown, folder = folder, Path(os.path.abspath(folder))  # `-o .` has a name and a parent too
    partial = _temporary(folder, _PARTIAL)
    # The folders made on the way to it, removed again if the output fails (bad input found
    # later, say): a failed command leaves nothing it created.
    made = [f for f in folder.parents if not f.exists()]
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        _clear_leftovers(folder)
        partial.mkdir()
    except OSError as exc:
        raise os_problem(exc, folder.parent) from None
    try:
        yield partial
        write_atomic(partial / MARKER, _marker(_written(partial, kind)))
        old, aside = _temporary(folder, _OLD), folder.exists() or folder.is_symlink()
        try:
            if aside:
                folder.rename(old)
            try:
                if aside:
                    # Checked again where nobody adds to it: the user may have, while the
                    # output was written.
                    _check_ours(old, shown, kind)
                partial.rename(folder)
            except BaseException:
                if aside:
                    old.rename(folder)
                raise
            sync_folder(folder.parent)
        except OSError as exc:
            raise os_problem(exc, folder) from None
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        for created in made:  # innermost first
            with contextlib.suppress(OSError):
                created.rmdir()
        raise
