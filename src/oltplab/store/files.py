"""Files written so that a kill or a full disk never leaves one half-written.

Every JSON or state file goes to a temporary file beside it, is flushed to disk, then
renamed over the old one: a reader sees the old file or the new one, never a part.
Secrets are created readable by their owner only, before a byte is written.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from oltplab.base.errors import DiskFull, EnvironmentProblem, OltplabError


def format_bytes(count: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if count < 1024 or unit == "TB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


def _existing(path: Path) -> Path:
    """path, or its nearest parent that exists: where bytes bound for path will land."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def free_bytes(path: Path) -> int:
    """Free space for us on the filesystem holding path (or its nearest existing parent)."""
    return shutil.disk_usage(_existing(path)).free


def _mount_point(path: Path) -> Path:
    path = path.resolve()
    while not path.is_mount():
        path = path.parent
    return path


def disk_full(path: Path) -> DiskFull:
    """The full disk said as such: the filesystem and the folder, not the file that was
    being written when it filled (a client.cnf is not to blame for a datadir's growth)."""
    folder = _existing(path)
    folder = folder if folder.is_dir() else folder.parent
    mount = _mount_point(folder)
    holds = "" if mount == folder.resolve() else f", which holds {folder},"
    return DiskFull(
        f"no space left on the device: the filesystem mounted at {mount}{holds} is full "
        f"({format_bytes(free_bytes(folder))} free); free some space there, then run the same "
        "command again: nothing stored is lost"
    )


def os_problem(exc: OSError, path: Path | None = None) -> OltplabError:
    """One line for an OS error: what, where, and what to do."""
    where = Path(exc.filename) if exc.filename else path
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return disk_full(where or Path.cwd())
    said = exc.strerror or str(exc)
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return EnvironmentProblem(f"{where}: {said}; check its permissions")
    if exc.errno == errno.ENOTDIR:
        return OltplabError(f"{where}: a file stands where a folder is needed")
    if exc.errno == errno.EISDIR:
        return OltplabError(f"{where}: is a folder; give a file name")
    if exc.errno == errno.ENOENT:
        return OltplabError(f"{where}: no such file or folder")
    return EnvironmentProblem(f"{where}: {said}")


def _scratch(path: Path, data: bytes, mode: int) -> str:
    """The data in a temporary file beside path, on disk: its name."""
    try:
        fd, scratch = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise os_problem(exc, path.parent) from None
    try:
        try:
            os.fchmod(fd, mode)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        except BaseException:
            os.unlink(scratch)
            raise
    except OSError as exc:
        raise os_problem(exc, path) from None
    return scratch


def sync_folder(folder: Path) -> None:
    directory = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def write_whole(files: dict[Path, bytes], mode: int = 0o644) -> None:
    """Files that go together (one output in several files), each written whole, renamed
    into place one after another only once all are on disk, in the order given: a kill or a
    full disk while they are written leaves every old one (all but an instant between two
    renames, when the first ones are new)."""
    scratches: dict[Path, str] = {}
    try:
        for path, data in files.items():
            scratches[path] = _scratch(path, data, mode)
        for path, scratch in scratches.items():
            try:
                os.replace(scratch, path)
            except OSError as exc:
                raise os_problem(exc, path) from None
    finally:
        for scratch in scratches.values():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(scratch)
    for folder in {path.parent for path in files}:
        sync_folder(folder)


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    write_whole({path: text.encode()}, mode)


def write_atomic_bytes(path: Path, data: bytes, mode: int = 0o644) -> None:
    write_whole({path: data}, mode)


def write_secret(path: Path, text: str) -> None:
    """A file only its owner can read (a password, options holding one), in a folder only
    its owner may enter when it has to be made."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_whole({path: text.encode()}, 0o600)


def tree_bytes(path: Path) -> int:
    """Disk space the files under path take (0 when it is not there)."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                continue
    return total


# Below this much free space a run stops before it starts anything more: a cell writes its
# raw outputs, telemetry and ledger rows, and the engine writes its logs.
MIN_FREE_BYTES = 32 * 1024**2


def ensure_space(needs: Mapping[Path, int], what: str = "go on") -> None:
    """Stop (DiskFull) unless each filesystem has the bytes bound for it plus a margin free.

    `needs` maps where bytes go to how many: each is checked on its own filesystem (a
    datadir restored into a work folder off the results disk needs no room beside the
    results), and needs on one filesystem add up. A shortage names the path needing most.
    """
    volumes: dict[int, tuple[Path, int]] = {}
    for path, needed in sorted(needs.items(), key=lambda need: -need[1]):
        device = _existing(path).stat().st_dev
        named, total = volumes.get(device, (path, 0))
        volumes[device] = (named, total + needed)
    for path, needed in volumes.values():
        free = free_bytes(path)
        if free < needed + MIN_FREE_BYTES:
            raise DiskFull(
                f"{path}: {format_bytes(free)} free, {format_bytes(needed + MIN_FREE_BYTES)} "
                f"needed to {what}; free some space, then run the same command again: nothing "
                "stored is lost"
            )


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_output_file(path: Path) -> None:
    """An --output file oltplab may write: not a folder, and its folder made if missing, as
    every command's -o makes the folders it names."""
    if path.is_dir():
        raise OltplabError(f"--output {path}: is a folder; give a file name")
    standing = next((place for place in path.parents if place.exists()), None)
    if standing is not None and not standing.is_dir():
        raise OltplabError(f"--output {path}: {standing} is a file; give a path in a folder")
    path.parent.mkdir(parents=True, exist_ok=True)
