"""Bad input, as a hostile but fair user gives it: how many are answered cleanly.

Each input runs the real command line in a fresh folder. It is answered cleanly when the
command ends within its time limit with exit 2 (bad input) or 3 (the environment), its last
line on stderr is one `error: ...` line, it prints no traceback, and it leaves the folder as
it found it (only what the input planted is there, unchanged). Prints one row per input
that is not, and the count of those that are.

    python bench/hostile.py [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.golden import build_tree

LIMIT_SECONDS = 60
ENGINE = 'engines = [{name = "mariadb-10.11.5"}]\n'
GOOD = ENGINE + 'workloads = ["oltp_read_only"]\n'


@dataclass(frozen=True)
class Case:
    name: str
    arguments: tuple[str, ...]
    plant: Callable[[Path], None] = field(default=lambda folder: None)


def spec(text: str) -> Callable[[Path], None]:
    return lambda folder: (folder / "bad.toml").write_text(text)


def imported(folder: Path) -> None:
    build_tree(folder / "tree")
    done = subprocess.run(
        [sys.executable, "-m", "oltplab", "import", "tree", "-r", "out"],
        cwd=folder,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def random_outputs(folder: Path) -> None:
    where = folder / "tree" / "benchmark_logs" / "mysql" / "8.0.45"
    where.mkdir(parents=True)
    for threads in (1, 4, 16):
        (where / f"Tier8G_RW_{threads}th.sysbench.txt").write_bytes(os.urandom(20_000))


SPECS = {
    "spec not TOML": ENGINE + "[protocol]\nthreads = = 4\n",
    "spec unknown key": ENGINE + "[protocol]\nthread = [4]\n",
    "threads 0": ENGINE + "[protocol]\nthreads = [0]\n",
    "threads negative": ENGINE + "[protocol]\nthreads = [-8]\n",
    "threads huge": ENGINE + "[protocol]\nthreads = [100000]\n",
    "threads text": ENGINE + '[protocol]\nthreads = ["four"]\n',
    "threads empty": ENGINE + "[protocol]\nthreads = []\n",
    "repetitions 0": ENGINE + "[protocol]\nrepetitions = 0\n",
    "repetitions huge": ENGINE + "[protocol]\nrepetitions = 1000000000\n",
    "measure negative": ENGINE + "[protocol]\nmeasure_seconds = -1\n",
    "measure huge": ENGINE + "[protocol]\nmeasure_seconds = 1000000000000\n",
    "warm-up negative": ENGINE + "[protocol]\nwarmup_rw_seconds = -5\n",
    "warm-up threads huge": ENGINE + "[protocol]\nwarmup_threads = 20000\n",
    "buffer pool beyond memory": ENGINE + '[config]\nbuffer_pool = "100T"\n',
    "buffer pool text": ENGINE + '[config]\nbuffer_pool = "lots"\n',
    "tier buffer pool": ENGINE + '[[tiers]]\nname = "big"\nbuffer_pool = "100T"\n',
    "unknown engine": 'engines = [{name = "mysql-9.9"}]\n',
    "no engines": "engines = []\n",
    "duplicate engines": 'engines = [{name = "mariadb-10.11.5"}, {name = "mariadb-10.11.5"}]\n',
    "unknown workload": ENGINE + 'workloads = ["oltp_everything"]\n',
    "missing script": ENGINE + '[[workloads]]\nname = "mine"\nscript = "nowhere.lua"\n',
    "table size 0": GOOD + "[dataset]\ntable_size = 0\n",
    "table size huge": GOOD + "[dataset]\ntable_size = 1000000000000000\n",
    "tables 0": GOOD + "[dataset]\ntables = 0\n",
    "missing tarball": 'engines = [{name = "ps", source = {tarball = "/nowhere/ps.tar.gz"}}]\n',
    "tarball not an archive": 'engines = [{name = "ps", source = {tarball = "bad.toml"}}]\n',
    "unknown placement host": GOOD + '[[placements]]\nserver = "db9"\n',
    "proxy command": GOOD
    + '[[hosts]]\nname = "db1"\nssh = "root@10.0.0.2"\n'
    + 'options = {ProxyCommand = "touch /tmp/owned"}\n',
    "block unknown dimension": GOOD + '[distribute]\nblock = ["colour"]\n',
    "name empty": 'name = ""\n' + GOOD,
}

CASES = [
    *(
        Case(f"run: {name}", ("run", "bad.toml", "-r", "out"), spec(text))
        for name, text in SPECS.items()
    ),
    Case("run: no spec file", ("run", "nowhere.toml", "-r", "out")),
    Case("run: empty results", ("run", "bad.toml", "-r", ""), spec(GOOD)),
    Case("run: missing argument", ("run",)),
    Case("run: unknown option", ("run", "bad.toml", "--colour"), spec(GOOD)),
    Case("plan: shards 0", ("plan", "bad.toml", "--shards", "0"), spec(GOOD)),
    Case("plan: shards text", ("plan", "bad.toml", "--shards", "x"), spec(GOOD)),
    Case("plan: shards 10^8", ("plan", "bad.toml", "--shards", "100000000"), spec(GOOD)),
    Case("plan: shards 10^12", ("plan", "bad.toml", "--shards", "1000000000000"), spec(GOOD)),
    Case("plan: block colour", ("plan", "bad.toml", "--block", "colour"), spec(GOOD)),
    Case("plan: repetitions 0", ("plan", "bad.toml", "--repetitions", "0"), spec(GOOD)),
    *(
        Case(
            f"submit k8s: {option} {value!r}",
            (
                "submit",
                "k8s",
                "bad.toml",
                "--shards",
                "2",
                "--storage",
                "s",
                "--image",
                "r/o:1",
                option,
                value,
                "--dry-run",
                "--manifests",
                "k8s",
            ),
            spec(GOOD),
        )
        for option, value in [
            ("--cpu", "-4"),
            ("--cpu", "0"),
            ("--memory", "lots"),
            ("--namespace", "Bench"),
            ("--namespace", "a\nb"),
            ("--image", ""),
            ("--image", "a b"),
            ("--node-selector", "x"),
        ]
    ),
    Case("import: nothing there", ("import", "nowhere", "-r", "out")),
    Case("import: empty folder", ("import", "empty", "-r", "out"), lambda f: (f / "empty").mkdir()),
    Case("import: random bytes", ("import", "tree", "-r", "out"), random_outputs),
    Case("import: into itself", ("import", "out", "-r", "out"), imported),
    Case(
        "import: bad map",
        ("import", "tree", "-r", "o2", "--map", "bad.toml"),
        lambda f: (build_tree(f / "tree"), (f / "bad.toml").write_text("x = = 1")),
    ),
    Case("export: nothing there", ("export", "nowhere")),
    Case("export: folder missing", ("export", "out", "-o", "no/x.csv"), imported),
    Case("export: output a folder", ("export", "out", "-o", "out"), imported),
    Case("export: format bogus", ("export", "out", "--format", "bogus"), imported),
    Case("export: table bogus", ("export", "out", "--table", "bogus"), imported),
    Case(
        "report: output a file",
        ("report", "out", "-o", "bad.toml"),
        lambda f: (imported(f), (f / "bad.toml").write_text("x")),
    ),
    Case("report: threshold negative", ("report", "out", "--threshold", "-5"), imported),
    Case("report: measure bogus", ("report", "out", "--measure", "bogus"), imported),
    Case("status: a file", ("status", "bad.toml"), spec(GOOD)),
    Case("rebuild: nothing there", ("rebuild", "nowhere")),
    Case("history: two folders", ("history", "a", "b", "--engine", "x")),
    Case("history: one folder thrice", ("history", "out", "out", "out", "--engine", "x"), imported),
    Case("gate: missing folders", ("gate", "a", "b", "--max-regression", "3%")),
    Case("gate: regression text", ("gate", "out", "out", "--max-regression", "lots"), imported),
    Case("site: nothing there", ("site", "nowhere", "-o", "site")),
    Case("replay: nothing there", ("replay", "nowhere")),
    Case("calibrate: seconds huge", ("calibrate", "x", "--seconds", "99999999")),
    Case(
        "bisect: repetitions huge",
        ("bisect", "--good", "a", "--bad", "b", "--max-repetitions", "100000"),
    ),
    Case("merge: not shards", ("merge", "out", "-o", "merged"), imported),
    Case("cancel: nothing there", ("cancel", "nowhere")),
    Case("engines fetch: unknown", ("engines", "fetch", "mysql-9.9")),
    Case("unknown command", ("bogus",)),
]


def snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        if p.is_file()
        else ""
        for p in sorted(folder.rglob("*"))
        if not p.is_fifo()
    }


def answered_cleanly(case: Case) -> str | None:
    """None, or what was wrong with the answer."""
    with tempfile.TemporaryDirectory(prefix="hostile-") as name:
        folder = Path(name)
        case.plant(folder)
        before = snapshot(folder)
        try:
            done = subprocess.run(
                [sys.executable, "-m", "oltplab", *case.arguments],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=LIMIT_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"no answer in {LIMIT_SECONDS} s"
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        if done.returncode not in (2, 3):
            return f"exit {done.returncode}"
        if "Traceback" in done.stderr or not lines or not lines[-1].startswith("error: "):
            return "not one error line: " + " / ".join(lines[-3:])[:200]
        if snapshot(folder) != before:
            return "left files behind or changed what was there"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="Only the inputs whose name holds this.")
    chosen = [case for case in CASES if parser.parse_args().only in case.name]
    unclean = [(case, why) for case in chosen if (why := answered_cleanly(case)) is not None]
    for case, why in unclean:
        print(f"NOT CLEAN  {case.name}: {why}")
    print(f"bad inputs answered cleanly: {len(chosen) - len(unclean)} / {len(chosen)}")


if __name__ == "__main__":
    main()
