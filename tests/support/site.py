"""A results site built from imported runs, for the tests that read it."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.cli import oltplab
from tests.support.synthetic import sysbench_text
from tests.support.trees import PLAIN, recorded, tree

# A folder's name and a spec's dataset, each of which must stay text on the page.
HOSTILE = "<img src=x onerror=alert(1)>"

# Three repetitions far apart around the others' 2,400 TPS: an interval far past them.
WILD = (800.0, 800.0, 5600.0)
EIGHT = PLAIN + "[dataset]\ntables = 8\n"
FOUR = PLAIN + "[dataset]\ntables = 4\n"
HOSTILE_SPEC = PLAIN + '[dataset]\nname = "</script><img src=x onerror=alert(2)>"\n'


def built_site(root: Path) -> Path:
    """A site over runs of two datasets (tables 8 and 4), one imported run without a spec
    and one of two engines, and a run with hostile names; its index."""
    runs = [
        recorded(root, "eight", 1, EIGHT),
        recorded(root, "four", 2, FOUR),
        _two_engines(root),
        recorded(root, HOSTILE, 4, HOSTILE_SPEC),
    ]
    done = oltplab("site", *runs, "-o", "site", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    return root / "site" / "index.html"


def _two_engines(root: Path) -> str:
    """An imported tree without a spec, of MySQL and MariaDB, 16 threads one far apart."""
    tree(root / "two-tree", 3, repetitions=3)
    logs = root / "two-tree" / "benchmark_logs"
    shutil.copytree(logs / "mysql" / "8.0.45", logs / "mariadb" / "10.11.5")
    for rep, tps in enumerate(WILD, start=1):
        text = sysbench_text([tps + (s % 3) for s in range(30)], 16)
        (logs / "mysql" / "8.0.45" / f"Tier2G_RW_16th_run{rep}.sysbench.txt").write_text(text)
    done = oltplab("import", "two-tree", "-r", "two", cwd=root)
    assert done.returncode == 0, done.stderr
    return "two"
