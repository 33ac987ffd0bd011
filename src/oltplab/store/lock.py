"""One writer per results directory.

`run`, `import`, `rerun` and `rebuild` hold an exclusive lock on the directory's lock file
while they write. It is an OS lock (flock): it dies with the process, so a run killed with
`kill -9` never leaves a stale lock behind. A command that ends before it wrote results
(bad input, say) leaves no lock file either. Readers (`status`, `report`, `export`) take no
lock; SQLite's WAL lets them read while a run writes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from types import TracebackType

from oltplab.base.errors import OltplabError, ResultsBusy
from oltplab.store.directory import ResultsDir
from oltplab.store.files import os_problem
from oltplab.store.status import RunStatus


def refuse_a_file(results: Path) -> None:
    """A file where the results folder should be is refused, before any other check."""
    if results.exists() and not results.is_dir():
        raise OltplabError(f"{results}: is a file; --results needs a folder")


def prepare_results(results: Path) -> None:
    """The results folder, made if needed; a file in its place is refused."""
    refuse_a_file(results)
    try:
        results.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise os_problem(exc, results) from None


def holder(results: Path) -> int | None:
    """The pid holding the directory's lock, or None when no process writes there.

    Read from /proc/locks, so asking never takes the lock (a writer starting at that
    moment is never turned away by a reader).
    """
    try:
        inode = ResultsDir(results).lock.stat().st_ino
        table = Path("/proc/locks").read_text()
    except OSError:
        return None
    for line in table.splitlines():
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"
        if (
            len(fields) >= 6
            and fields[1:4:2] == ["FLOCK", "WRITE"]
            and fields[5].rsplit(":", 1)[-1] == str(inode)
        ):
            return int(fields[4])
    return None


def _command_of(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return " ".join(part.decode(errors="replace") for part in raw.split(b"\0") if part)


class ResultsLock:
    """`with ResultsLock(results):` writes there alone, or raises ResultsBusy at once."""

    def __init__(self, results: Path) -> None:
        self.results = results
        self._fd: int | None = None
        self._made_folder = False

    def __enter__(self) -> ResultsLock:
        self._made_folder = not self.results.is_dir()
        prepare_results(self.results)
        path = ResultsDir(self.results).lock
        while True:
            fd = self._take(path)
            # A holder leaving a folder that holds no results unlinks the lock file (see
            # __exit__), so the file locked may no longer be the one at `path`: lock that.
            try:
                if os.fstat(fd).st_ino == path.stat().st_ino:
                    break
            except FileNotFoundError:
                pass
            os.close(fd)
        self._fd = fd
        return self

    def _take(self, path: Path) -> int:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise os_problem(exc, path) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            pid = holder(self.results)
            who = f"oltplab pid {pid}" if pid else "another oltplab process"
            what = _command_of(pid) if pid else ""
            raise ResultsBusy(
                f"{self.results}: {who} is writing here"
                + (f" ({what})" if what else "")
                + "; wait for it to end"
                + (f", or stop it with `kill {pid}`" if pid else "")
                + ", or use another --results folder"
            ) from None
        return fd

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._fd is None:
            return
        here = ResultsDir(self.results)
        if not (here.ledger.is_file() or here.journal.is_file()):
            # A command that ends before writing results (bad input, say) leaves no lock file
            # (nor a folder it made) behind; unlinked while still held, so that no other
            # writer takes the file in between (__enter__ checks it locked the file there).
            here.lock.unlink(missing_ok=True)
            if self._made_folder:
                with contextlib.suppress(OSError):  # not empty: something else is there
                    self.results.rmdir()
        os.close(self._fd)  # closing the only descriptor releases the lock
        self._fd = None


def run_state(status: str, results: Path) -> str:
    """A run's status as `status` tells it: one the ledger calls running is running only
    while its process holds the results directory's lock."""
    if status != RunStatus.RUNNING:
        return status
    if pid := holder(results):
        return f"running (oltplab pid {pid})"
    return "interrupted (its process is gone; the next run resumes it)"
