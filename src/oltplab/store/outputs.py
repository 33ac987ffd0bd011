"""Outputs written whole: a report, a site, files that go together.

Such a folder is many files written one after another; a reader must never find some of
them new and some missing or old. So the folder is written under a temporary name beside
its own, and renamed into place only once every file is in it: the old folder is renamed
aside, the new one renamed in, the old one removed. A kill leaves the old folder, or none,
under the real name, and a temporary one beside it that the next run clears.

A marker file says what oltplab wrote there: a folder holding anything else is not ours to
replace.
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from oltplab.base.errors import OltplabError
from oltplab.base.processes import pid_alive
from oltplab.store.directory import OUTPUT_MARKER as MARKER
from oltplab.store.files import check_output_file, os_problem, sync_folder, write_atomic

_PARTIAL, _OLD = "partial", "old"


def _written_as(folder: Path, kind: str) -> bool:
    try:
        with (folder / MARKER).open("rb") as handle:
            return handle.read(64).decode(errors="replace").strip() == kind
    except OSError:
        return False


def check_output_folder(
    folder: Path, kind: str, inputs: Sequence[Path] = (), ours: bool = False
) -> None:
    """A folder `kind` may be written to, in place of what it holds: not a file, apart from
    the results folders it reads, and empty or written by oltplab as a `kind` before (or
    `ours` by its place: a results folder's own report folder)."""
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
    if ours or not folder.is_dir() or _written_as(folder, kind):
        return
    if any(folder.iterdir()):
        raise OltplabError(
            f"--output {folder}: holds files oltplab did not write as a {kind}; give a new "
            f"or empty folder, or one a previous {kind} was written to"
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


@contextmanager
def whole_folder(
    folder: Path, kind: str, inputs: Sequence[Path] = (), ours: bool = False
) -> Iterator[Path]:
    """A new empty folder to write the `kind` into; when the block ends without an error it
    replaces `folder` whole, else it is removed and `folder` is left as it was."""
    check_output_folder(folder, kind, inputs, ours)
    folder = Path(os.path.abspath(folder))  # `-o .` has a name and a parent too
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
        write_atomic(partial / MARKER, f"{kind}\n")
        old, aside = _temporary(folder, _OLD), folder.exists()
        try:
            if aside:
                folder.rename(old)
            try:
                partial.rename(folder)
            except OSError:
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
