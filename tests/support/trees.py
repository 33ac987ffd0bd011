"""Synthetic sysbench trees imported as results, for the tests of what reads results."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from oltplab.store.ledger import Ledger
from tests.support.cli import oltplab
from tests.support.synthetic import sysbench_text

LEVELS = {1: 300.0, 4: 1000.0, 16: 2400.0}


def tree(
    root: Path,
    seed: int,
    slower: dict[int, float] | None = None,
    threads: tuple[int, ...] = (1, 4, 16),
    repetitions: int = 5,
) -> Path:
    """mysql 8.0.45 at 1, 4 and 16 threads, 5 repetitions of 30 s, 3% noise between them;
    `slower` takes a share off a thread count's TPS."""
    rng = np.random.default_rng(seed)
    folder = root / "benchmark_logs" / "mysql" / "8.0.45"
    folder.mkdir(parents=True)
    for count in threads:
        level = LEVELS[count]
        for rep in range(1, repetitions + 1):
            mean = level * (1 - (slower or {}).get(count, 0.0)) * rng.normal(1, 0.03)
            seconds = rng.normal(mean, mean * 0.02, 30)
            name = f"Tier2G_RW_{count}th_run{rep}.sysbench.txt"
            (folder / name).write_text(sysbench_text(list(seconds), count))
    return root


def imported(tmp_path: Path, name: str, seed: int, slower: dict[int, float] | None = None) -> str:
    tree(tmp_path / f"{name}-tree", seed, slower)
    done = oltplab("import", f"{name}-tree", "-r", name, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return name


PLAIN = 'workloads = ["oltp_read_write"]\n[[engines]]\nname = "mysql-8.0.45"\n'


def recorded(tmp_path: Path, name: str, seed: int, spec: str) -> str:
    """An imported run whose ledger keeps the spec it is said to have been run from."""
    imported(tmp_path, name, seed)
    ledger = Ledger.open(tmp_path / name)
    ledger.set_meta("spec", spec)
    ledger.set_meta("spec_digest", hashlib.sha256(spec.encode()).hexdigest())
    ledger.close()
    return name
