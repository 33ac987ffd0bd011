"""Isolation empties only our own datadir's pages from the page cache, never the host's."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from oltplab.engines.isolation import evict_page_cache

SIZE = 4 * 2**20


def resident_bytes(path: Path) -> int:
    """What the page cache holds of a file, as the kernel says (fincore: mincore(2))."""
    done = subprocess.run(
        ["fincore", "--bytes", "--noheadings", "--raw", "--output", "RES", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


def cached_file(path: Path, size: int) -> Path:
    """A file of `size` bytes written to the disk and read back: all its pages cached and
    clean, as another user's recently read file is."""
    path.write_bytes(os.urandom(size))
    with path.open("rb") as handle:
        os.fsync(handle.fileno())
        handle.read()
    return path


def test_isolation_evicts_the_datadirs_pages_and_leaves_the_hosts_alone(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    theirs = cached_file(tmp_path / "elsewhere" / "another-users-file", SIZE)
    datadir = tmp_path / "datadir"
    (datadir / "sbtest").mkdir(parents=True)
    # As a restore leaves it: just copied, its pages still dirty.
    ours = datadir / "sbtest" / "sbtest1.ibd"
    ours.write_bytes(os.urandom(SIZE))
    # Links out of the datadir are not followed, to a file or to a folder.
    (datadir / "link-out").symlink_to(theirs)
    (datadir / "folder-out").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    os.mkfifo(datadir / "fifo")  # nor is what is not a regular file opened (it would block)
    assert resident_bytes(ours) == SIZE and resident_bytes(theirs) == SIZE

    said = evict_page_cache(datadir)

    assert resident_bytes(ours) == 0
    assert resident_bytes(theirs) == SIZE
    assert said == f"evicted 1 file(s), 4.0 MiB, of {datadir} from the page cache"
