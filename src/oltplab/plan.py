"""The matrix as an ordered list of server sessions, each a list of measured cells.

A session is one engine started on a fresh copy of its dataset snapshot with one tier's
configuration, warmed up for one workload, then measured at each thread count.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from oltplab.spec import Spec, WorkloadSpec


@dataclass(frozen=True)
class Cell:
    engine: str
    tier: str
    workload: str
    threads: int
    repetition: int
    scenario: str

    @property
    def key(self) -> str:
        return "|".join(
            (
                self.engine,
                self.scenario,
                self.tier,
                self.workload,
                str(self.threads),
                str(self.repetition),
            )
        )


@dataclass(frozen=True)
class Session:
    engine: str
    tier: str
    workload: str
    cells: tuple[Cell, ...]


def scenario(workload: WorkloadSpec, network: bool = False) -> str:
    return f"{'ro' if workload.read_only else 'rw'}-{'network' if network else 'local'}"


def build_plan(spec: Spec) -> list[Session]:
    """Sessions in the order the spec asks for.

    as-listed runs every repetition inside one session per engine, tier and workload.
    interleaved and random give each repetition its own session, cycling engines within a
    round so that drift on the host hits every engine alike.
    """
    reps = range(1, spec.protocol.repetitions + 1)

    def session(engine: str, tier: str, workload: WorkloadSpec, rounds: range) -> Session:
        cells = tuple(
            Cell(engine, tier, workload.name, threads, rep, scenario(workload))
            for threads in spec.protocol.threads
            for rep in rounds
        )
        return Session(engine, tier, workload.name, cells)

    tiers = [tier.name for tier in spec.tier_list]
    engines = [engine.name for engine in spec.engines]
    if spec.protocol.order == "as-listed":
        return [
            session(engine, tier, workload, reps)
            for engine in engines
            for tier in tiers
            for workload in spec.workloads
        ]
    sessions = [
        session(engine, tier, workload, range(rep, rep + 1))
        for rep in reps
        for tier in tiers
        for workload in spec.workloads
        for engine in engines
    ]
    if spec.protocol.order == "random":
        random.Random(spec.protocol.seed).shuffle(sessions)
    return sessions


def cells_of(plan: list[Session]) -> list[Cell]:
    return [cell for session in plan for cell in session.cells]


# --- artifact names: the layout of the 2026 report's raw data ----------------------------------

_DEFAULT_DIRS = {"oltp_read_write": "benchmark_logs", "oltp_read_only": "benchmark_logs_read_only"}


def scenario_dir(workload: str) -> str:
    return _DEFAULT_DIRS.get(workload, f"benchmark_logs_{workload}")


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]", "_", text)


def session_stem(tier: str, read_only: bool) -> str:
    return f"Tier{safe_name(tier)}_{'RO' if read_only else 'RW'}"


def cell_stem(cell: Cell, read_only: bool) -> str:
    prefix = f"run{cell.repetition}_" if cell.repetition > 1 else ""
    return f"{prefix}{session_stem(cell.tier, read_only)}_{cell.threads}th"
