"""Outputs written whole (issue 42: M4, L11, L4): a report, a site or a replay killed while
it is written leaves its previous version or none, never a part; its chart workers die with
it; and no output replaces a results folder, or files oltplab did not write."""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest

from tests.support.cli import oltplab, start_oltplab
from tests.support.engines import wait_for
from tests.support.golden import build_tree

TWO_CORES = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="one core: the charts are drawn in process"
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four results directories (A to D) of the golden tree: their report draws 18 charts."""
    root = tmp_path_factory.mktemp("whole")
    build_tree(root / "tree")
    done = oltplab("import", "tree", "-r", "A", cwd=root)
    assert done.returncode == 0, done.stderr
    for name in "BCD":
        shutil.copytree(root / "A", root / name)
    return root


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the name (state first); None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _children(pid: int) -> dict[int, str]:
    """The live children of pid, each with its start time (so that a reused pid is not it)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) and fields[1] == str(pid):
            found[int(entry.name)] = fields[19]
    return found


def _alive(pid: int, started: str) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] not in "ZX" and fields[19] == started


def _kill_while_drawing(root: Path, *args: str) -> dict[int, str]:
    """The command started, SIGKILLed once its chart workers exist and it has written a
    report.md under `root` (charts are drawn then); the workers it had."""
    since = time.time()
    process = start_oltplab(*args, cwd=root)
    workers: dict[int, str] = {}

    def drawing() -> bool:
        workers.update(_children(process.pid))
        return bool(workers) and any(p.stat().st_mtime > since for p in root.glob("**/report.md"))

    try:
        wait_for(drawing, 120, f"oltplab {args[0]} to draw charts")
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        assert process.stdout is not None
        process.stdout.close()  # workers left behind would hold it open: not read to its end
    return workers


def _linked_charts_missing(folder: Path) -> list[str]:
    text = (folder / "report.md").read_text()
    linked = re.findall(r"\((charts/[^)]+\.png)\)", text)
    assert linked
    return [name for name in linked if not (folder / name).is_file()]


def _assert_workers_die(workers: dict[int, str]) -> None:
    try:
        wait_for(
            lambda: not [pid for pid, started in workers.items() if _alive(pid, started)],
            10,
            f"the chart workers {sorted(workers)} to die with their report",
        )
    finally:  # none outlives the test, whatever it found
        for pid, started in workers.items():
            if _alive(pid, started):
                os.kill(pid, signal.SIGKILL)


def _whole(report: Path) -> bool:
    """A report is under that name only once every chart it links to is."""
    return not report.exists() or _linked_charts_missing(report) == []


@TWO_CORES
def test_a_killed_report_leaves_no_worker_and_no_half_report(runs: Path) -> None:
    # Killed with no report there yet: no worker left, and no report that names a chart
    # not drawn (the kill comes once report.md is written, while the charts are drawn).
    everything = ("report", "A", "B", "C", "D", "-o", "X")
    _assert_workers_die(_kill_while_drawing(runs, *everything))
    assert _whole(runs / "X")

    # Killed while replacing a complete report: that one stays, or the new one, whole.
    first = oltplab("report", "A", "-o", "X", cwd=runs)
    assert first.returncode == 0, first.stderr
    _assert_workers_die(_kill_while_drawing(runs, *everything))
    assert _whole(runs / "X")

    # The next report clears what killed ones left beside it, and only that.
    (runs / f".X.partial-{os.getpid()}-0000").mkdir()  # a live process's: kept
    again = oltplab("report", "A", "B", "-o", "X", cwd=runs)
    assert again.returncode == 0, again.stderr
    assert _whole(runs / "X")
    assert [p.name for p in runs.glob(".X.*")] == [f".X.partial-{os.getpid()}-0000"]


@TWO_CORES
def test_a_killed_site_leaves_no_worker_and_no_half_site(runs: Path) -> None:
    _assert_workers_die(_kill_while_drawing(runs, "site", "A", "B", "C", "D", "-o", "S"))
    # Its index comes last: a site without it is a part.
    assert not (runs / "S").exists() or (runs / "S" / "index.html").is_file()


def _refused(done, *words: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for word in words:
        assert word in lines[0]


def _listing(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("command", ["site", "report"])
def test_an_output_in_a_results_folder_is_refused(runs: Path, command: str) -> None:
    before = _listing(runs / "A")
    for output in ("A", "A/site"):
        _refused(oltplab(command, "A", "B", "-o", output, cwd=runs), output, "results folder A")
    # Nor may the output hold a results folder (replacing it would remove the results).
    _refused(oltplab(command, "D/..", "-o", ".", cwd=runs), "results folder D/..")
    assert _listing(runs / "A") == before
    assert not (runs / "A" / "site").exists()


@pytest.mark.parametrize(("command", "page"), [("site", "index.html"), ("report", "report.md")])
def test_an_output_replaces_only_what_oltplab_wrote(runs: Path, command: str, page: str) -> None:
    mine = runs / f"mine-{command}"
    mine.mkdir()
    (mine / page).write_text("my own page\n")
    _refused(oltplab(command, "A", "-o", mine.name, cwd=runs), mine.name, "did not write")
    assert _listing(mine) == {page: b"my own page\n"}
    assert not list(runs.glob(f".{mine.name}.*"))


def test_a_site_replaces_its_own_previous_site(runs: Path) -> None:
    # (A report replacing its own: test_a_killed_report_leaves_no_worker_and_no_half_report.)
    for given in ("A", "B"):
        done = oltplab("site", given, "-o", "ours", cwd=runs)
        assert done.returncode == 0, done.stderr
    assert [p.name for p in (runs / "ours" / "runs").iterdir()] == ["B"]


def test_replay_replaces_only_its_own_files(runs: Path) -> None:
    theirs = runs / "theirs"
    theirs.mkdir()
    (theirs / "replay.csv").write_text("my,own\n1,2\n")
    replay = ("replay", "A", "--min-seconds", "10")
    _refused(oltplab(*replay, "-o", "theirs", cwd=runs), "theirs/replay.csv", "oltplab wrote")
    assert _listing(theirs) == {"replay.csv": b"my,own\n1,2\n"}
    (runs / "ours-replay").mkdir()
    for _ in range(2):  # the second replaces the first's
        done = oltplab(*replay, "-o", "ours-replay", cwd=runs)
        assert done.returncode == 0, done.stderr
    assert sorted(_listing(runs / "ours-replay")) == ["replay.csv", "replay.json"]


def test_an_output_that_fails_leaves_no_folder_it_made(runs: Path) -> None:
    # The report's default folder is inside its results folder, made before they are read.
    _refused(oltplab("report", "nothere", cwd=runs), "nothere")
    _refused(oltplab("site", "nothere", "-o", "new/site", cwd=runs), "nothere")
    assert not (runs / "nothere").exists() and not (runs / "new").exists()


@pytest.mark.parametrize(("command", "page"), [("site", "index.html"), ("report", "report.md")])
def test_a_file_added_to_an_output_is_never_deleted(runs: Path, command: str, page: str) -> None:
    # Issue 58 H-4: a folder an earlier output marked was replaced whole, and a file added
    # to it since went with it.
    folder = runs / f"kept-{command}"
    first = oltplab(command, "A", "-o", folder.name, cwd=runs)
    assert first.returncode == 0, first.stderr
    (folder / "notes.txt").write_text("my notes\n")
    before = _listing(folder)
    again = oltplab(command, "A", "-o", folder.name, cwd=runs)
    _refused(again, f"--output {folder.name}: holds notes.txt", "did not write", "another --output")
    assert _listing(folder) == before
    # A file oltplab wrote and the user changed since is theirs as much.
    (folder / "notes.txt").unlink()
    (folder / page).write_text("my own page\n")
    before = _listing(folder)
    edited = oltplab(command, "A", "-o", folder.name, cwd=runs)
    _refused(edited, f"holds {page}", "changed since oltplab wrote it")
    assert _listing(folder) == before
    assert not list(runs.glob(f".{folder.name}.*"))


def test_a_file_added_to_a_results_folders_own_report_is_kept(runs: Path) -> None:
    shutil.copytree(runs / "A", runs / "own")
    first = oltplab("report", "own", cwd=runs)
    assert first.returncode == 0, first.stderr
    (runs / "own" / "report" / "charts" / "mine.png").write_bytes(b"my chart")
    before = _listing(runs / "own" / "report")
    _refused(oltplab("report", "own", cwd=runs), "own/report", "holds charts/mine.png")
    assert _listing(runs / "own" / "report") == before


def test_a_file_added_while_the_output_is_written_is_kept(tmp_path: Path) -> None:
    # Checked again once the old folder is aside: a report takes minutes to write.
    from oltplab.base.errors import OltplabError
    from oltplab.store.outputs import whole_folder

    folder = tmp_path / "out"
    with whole_folder(folder, "report") as partial:
        (partial / "report.md").write_text("first\n")
    late = "holds late.txt, and oltplab did not write it"
    with pytest.raises(OltplabError, match=late), whole_folder(folder, "report") as partial:
        (partial / "report.md").write_text("second\n")
        (folder / "late.txt").write_text("mine\n")
    assert (folder / "report.md").read_text() == "first\n"
    assert (folder / "late.txt").read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.parametrize("command", ["site", "report"])
def test_an_output_given_as_a_link_is_refused(runs: Path, command: str) -> None:
    # Issue 58 L-3: the link was replaced by a folder, and left behind as .NAME.old-PID-*.
    target = runs / f"target-{command}"
    target.mkdir()
    link = runs / f"link-{command}"
    link.symlink_to(target.name)
    done = oltplab(command, "A", "-o", link.name, cwd=runs)
    _refused(done, f"--output {link.name}: is a symbolic link (to {target.name})")
    assert link.is_symlink() and os.readlink(link) == target.name
    assert list(target.iterdir()) == []
    assert not list(runs.glob(f".{link.name}.*"))


def test_the_gate_replaces_only_its_own_files(runs: Path) -> None:
    # Issue 58 H-4: a user's own gate.md was overwritten.
    mine = runs / "mine-gate"
    mine.mkdir()
    (mine / "gate.md").write_text("my own gate notes\n")
    gate = ("gate", "A", "B", "--margin", "50%", "-o")
    _refused(oltplab(*gate, mine.name, cwd=runs), "mine-gate/gate.md", "did not write it")
    assert _listing(mine) == {"gate.md": b"my own gate notes\n"}
    ours = runs / "ours-gate"
    for _ in range(2):  # the second replaces the first's, and keeps what is beside them
        done = oltplab(*gate, ours.name, cwd=runs)
        assert done.returncode in (0, 5), done.stderr  # the golden tree's copies: undecided
        (ours / "notes.txt").write_text("mine\n")
    assert {"gate.md", "gate.xml", "notes.txt"} <= set(_listing(ours))
    (ours / "gate.xml").write_text("<mine/>\n")
    before = _listing(ours)
    _refused(oltplab(*gate, ours.name, cwd=runs), "ours-gate/gate.xml", "changed since")
    assert _listing(ours) == before
