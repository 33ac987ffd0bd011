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
from tests.support.golden import build_tree

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


def binary_spec(folder: Path) -> None:
    (folder / "bad.toml").write_bytes(b"engines = [\xff\xfe]\n")


def foreign_site(folder: Path) -> None:
    imported(folder)
    (folder / "www").mkdir()
    (folder / "www" / "index.html").write_text("<p>someone else's page</p>")


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
    # Numbers and switches must be what TOML calls them, not text that looks like one.
    "stop target quoted": GOOD + '[protocol]\nstop = "adaptive"\nstop_target_pct = "2"\n',
    "slice seconds quoted": GOOD + '[protocol]\norder = "sliced"\nslice_seconds = "0.25"\n',
    "measure quoted": GOOD + '[protocol]\nmeasure_seconds = "30"\n',
    "repetitions quoted": GOOD + '[protocol]\nrepetitions = "3"\n',
    "threads quoted": GOOD + '[protocol]\nthreads = ["4"]\n',
    "isolation quoted": GOOD + '[protocol]\nisolation = "yes"\n',
    "closed loop quoted": GOOD + '[protocol]\nclosed_loop = "true"\n',
    "tables quoted": GOOD + '[dataset]\ntables = "2"\n',
    "binlog quoted": ENGINE + '[config]\nbinlog = "false"\n',
    "budget quoted": GOOD + '[protocol]\nbudget_minutes = "10"\n',
    # Values out of their range.
    "report interval 0": GOOD + "[protocol]\nreport_interval = 0\n",
    "slice seconds 0": GOOD + "[protocol]\nslice_seconds = 0\n",
    "slice seconds nan": GOOD + "[protocol]\nslice_seconds = nan\n",
    "target 0": GOOD + "[protocol]\ntarget_ci_pct = 0\n",
    "budget 0": GOOD + "[protocol]\nbudget_minutes = 0\n",
    "stop bogus": GOOD + '[protocol]\nstop = "whenever"\n',
    "stop target 0": GOOD + '[protocol]\nstop = "adaptive"\nstop_target_pct = 0\n',
    "stop target 100": GOOD + '[protocol]\nstop = "adaptive"\nstop_target_pct = 100\n',
    "stop min negative": GOOD + "[protocol]\nstop_min_seconds = -1\n",
    "order bogus": GOOD + '[protocol]\norder = "shuffled"\n',
    "seed negative": GOOD + "[protocol]\nseed = -1\n",
    "rate negative": GOOD + "[protocol]\nrates = [-10]\n",
    "rate 0": GOOD + "[protocol]\nrates = [0]\n",
    "precision measure bogus": GOOD + '[protocol]\nprecision_measure = "joules"\n',
    "warm-up threads 0": GOOD + "[protocol]\nwarmup_threads = 0\n",
    "read percent 150": ENGINE + '[[workloads]]\nname = "m"\nread_percent = 150\n',
    "mix not 100": ENGINE + '[[workloads]]\nname = "m"\nread_percent = 60\nwrite_percent = 60\n',
    "rand type bogus": GOOD + '[dataset]\nrand_type = "zipf"\n',
    "pareto h 2": GOOD + '[dataset]\nrand_type = "pareto"\nrand_pareto_h = 2\n',
    "reserved sysbench option": ENGINE
    + '[[workloads]]\nname = "w"\ntest = "oltp_read_only"\noptions = {threads = 9}\n',
    "sysbench option name": ENGINE
    + '[[workloads]]\nname = "w"\ntest = "oltp_read_only"\noptions = {"a b" = 1}\n',
    "flush at commit 3": ENGINE + "[config]\nflush_log_at_trx_commit = 3\n",
    "binlog format bogus": ENGINE + '[config]\nbinlog_format = "JSON"\n',
    "charset with space": ENGINE + '[config]\ncharset = "utf8 mb4"\n',
    "max connections 0": ENGINE + "[config]\nmax_connections = 0\n",
    "io capacity negative": ENGINE + "[config]\nio_capacity = -1\n",
    "extra for unknown family": ENGINE + '[config.extra.oracle]\nx = "1"\n',
    "tier name a path": GOOD + '[[tiers]]\nname = "../x"\n',
    "tier name empty": GOOD + '[[tiers]]\nname = ""\n',
    "engine name a path": 'engines = [{name = "../mysql-8.0.31"}]\n',
    "engine name newline": 'engines = [{name = "mariadb\\n-10.11.5"}]\n',
    "ssh option injection": GOOD + '[[hosts]]\nname = "db1"\nssh = "-oProxyCommand=touch x"\n',
    "spec with NUL": ENGINE + "\0\n",
    "spec of 3 million unknown keys": "".join(f"k{i} = 1\n" for i in range(3_000_000)),
}


def submit_k8s(*options: str) -> tuple[str, ...]:
    """A dry-run `submit k8s` of two shards, with options given here taking precedence."""
    given = dict(zip(options[::2], options[1::2], strict=True))
    defaults = {"--shards": "2", "--storage": "s", "--image": "r/o:1"}
    chosen = [part for pair in {**defaults, **given}.items() for part in pair]
    return ("submit", "k8s", "bad.toml", *chosen, "--dry-run", "--manifests", "k8s")


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
            submit_k8s(option, value),
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
    Case("report: threshold negative", ("report", "out", "--margin", "-5"), imported),
    Case("report: measure bogus", ("report", "out", "--measure", "bogus"), imported),
    Case("status: a file", ("status", "bad.toml"), spec(GOOD)),
    Case("rebuild: nothing there", ("rebuild", "nowhere")),
    Case("history: two folders", ("history", "a", "b", "--engine", "x")),
    Case("history: one folder thrice", ("history", "out", "out", "out", "--engine", "x"), imported),
    Case("gate: missing folders", ("gate", "a", "b", "--margin", "3%")),
    Case("gate: regression text", ("gate", "out", "out", "--margin", "lots"), imported),
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
    Case("run: spec a folder", ("run", "d", "-r", "out"), lambda f: (f / "d").mkdir()),
    Case("run: spec not UTF-8", ("run", "bad.toml", "-r", "out"), binary_spec),
    Case("run: results a file", ("run", "bad.toml", "-r", "bad.toml"), spec(GOOD)),
    Case(
        "run: budget 0",
        ("run", "bad.toml", "-r", "out", "--margin", "3%", "--budget", "0"),
        spec(GOOD),
    ),
    Case(
        "run: budget text",
        ("run", "bad.toml", "-r", "out", "--margin", "3%", "--budget", "lots"),
        spec(GOOD),
    ),
    Case("run: precision 0%", ("run", "bad.toml", "-r", "out", "--margin", "0%"), spec(GOOD)),
    Case(
        "run: work dir a file",
        ("run", "bad.toml", "-r", "out", "--work-dir", "bad.toml"),
        spec(GOOD),
    ),
    Case("plan: precision 0%", ("plan", "bad.toml", "--margin", "0%"), spec(GOOD)),
    Case("plan: precision -5%", ("plan", "bad.toml", "--margin", "-5%"), spec(GOOD)),
    Case("plan: precision text", ("plan", "bad.toml", "--margin", "tight"), spec(GOOD)),
    Case("plan: precision 101%", ("plan", "bad.toml", "--margin", "101%"), spec(GOOD)),
    Case("plan: stop bogus", ("plan", "bad.toml", "--stop", "whenever"), spec(GOOD)),
    Case(
        "plan: from nowhere",
        ("plan", "bad.toml", "--stop", "adaptive", "--from", "nowhere"),
        spec(GOOD),
    ),
    Case("site: output the results", ("site", "out", "-o", "out"), imported),
    Case("site: output inside the results", ("site", "out", "-o", "out/site"), imported),
    Case("site: someone else's index", ("site", "out", "-o", "www"), foreign_site),
    Case("rebuild: empty folder", ("rebuild", "empty"), lambda f: (f / "empty").mkdir()),
    Case("rebuild: a file", ("rebuild", "bad.toml"), spec(GOOD)),
    Case("gate: candidate missing", ("gate", "out", "nosuch"), imported),
    Case("gate: base missing", ("gate", "nosuch", "out"), imported),
    Case("replay: target 0", ("replay", "out", "--resolution", "0%"), imported),
    Case("replay: target text", ("replay", "out", "--resolution", "tight"), imported),
    Case("replay: output the input", ("replay", "nosuch", "-o", "x")),
    Case("import: a file", ("import", "bad.toml", "-r", "out"), spec(GOOD)),
    Case(
        "import: results a file",
        ("import", "tree", "-r", "bad.toml"),
        lambda f: (build_tree(f / "tree"), (f / "bad.toml").write_text("x")),
    ),
    Case("export: otava without -o", ("export", "out", "--format", "otava"), imported),
    Case(
        "export: salvage json table",
        ("export", "out", "--salvage", "--table", "progression"),
        imported,
    ),
    Case(
        "report: output inside another run", ("report", "out", "-o", "out/ledger.sqlite"), imported
    ),
    Case("report: threshold text", ("report", "out", "--margin", "lots"), imported),
    Case("history: engine missing", ("history", "out", "out", "--engine", "nosuch"), imported),
    Case("reproduced: missing repeat", ("reproduced", "out", "nosuch"), imported),
    Case("reproduced: margin text", ("reproduced", "out", "out", "--margin", "lots"), imported),
    Case("rerun: nothing there", ("rerun", "nowhere", "--results", "again")),
    Case(
        "rerun: no run.json",
        ("rerun", "empty", "--results", "again"),
        lambda f: (f / "empty").mkdir(),
    ),
    Case("calibrate: unknown engine", ("calibrate", "mysql-9.9")),
    Case("bisect: unknown releases", ("bisect", "--good", "mysql-9.9", "--bad", "mysql-9.10")),
    Case(
        "bisect: same release", ("bisect", "--good", "mariadb-10.11.5", "--bad", "mariadb-10.11.5")
    ),
    Case(
        "submit slurm: shards 0",
        ("submit", "slurm", "bad.toml", "--shards", "0", "--results", "out"),
        spec(GOOD),
    ),
    Case(
        "submit k8s: shards 0",
        submit_k8s("--shards", "0"),
        spec(GOOD),
    ),
    *(
        Case(
            f"submit k8s: storage {value!r}",
            submit_k8s("--storage", value),
            spec(GOOD),
        )
        for value in ['pvc"', "PVC", "a b", "", "a/b"]
    ),
    Case("cancel: a plain folder", ("cancel", "empty"), lambda f: (f / "empty").mkdir()),
    Case("engines fetch: a path", ("engines", "fetch", "../mysql-8.0.31")),
    Case("engines list: unknown family", ("engines", "list", "--family", "oracle")),
    Case("status: nothing there", ("status", "nowhere")),
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
