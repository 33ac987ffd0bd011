"""Where a results directory stands, or each shard of a distributed run: the scheduler's
word and its ledger's; what `oltplab status` tells of it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oltplab.base.errors import EngineError, EnvironmentProblem
from oltplab.base.telling import Rows, Said, Told
from oltplab.base.wording import shown
from oltplab.distribute.layout import (
    SPEC_FILE,
    is_distributed,
    read_distributed,
    shard_state,
    shards_of,
)
from oltplab.distribute.schedulers import scheduler_named
from oltplab.kube.client import connect
from oltplab.kube.operated import read_operated
from oltplab.report.run_tables import failed_rows, status_rows
from oltplab.spec import Spec, load_spec
from oltplab.spec.sources import KubernetesSource
from oltplab.store.ledger import Ledger
from oltplab.store.lock import run_state
from oltplab.store.rows import CellRow
from oltplab.store.status import Status


@dataclass(frozen=True)
class Standing:
    """One results directory's cells by status, the failed ones with their reasons, and
    its last run: when it started and how it stands (None if it never ran)."""

    counts: dict[str, int]
    failed: list[CellRow]
    last_run: tuple[str, str] | None


def standing_of(results: Path) -> Standing:
    ledger = Ledger.open(results, create=False)
    try:
        counts = ledger.counts()
        failed = [row for row in ledger.cells() if row.status == Status.FAILED]
        runs = ledger.runs()
    finally:
        ledger.close()
    last = (runs[-1].started_at, run_state(runs[-1].status, results)) if runs else None
    return Standing(counts, failed, last)


def status_told(results: list[Path]) -> Told:
    """One results directory's cells by status, its failed ones and its last run; or, for
    several (or a distributed run), one row per shard."""
    if len(results) == 1 and shards_of(results[0]) == results:
        standing = standing_of(results[0])
        said: list[Said] = [status_rows(standing.counts)]
        if standing.failed:
            said.append(failed_rows(standing.failed))
        if standing.last_run is not None:
            started, state = standing.last_run
            said.append(f"last run: started {started}, {state}")
        return Told(tuple(said), f"oltplab report {shown(results[0])}")
    named = " ".join(shown(p) for p in results)
    shards = shards_rows(results_rows(results))
    databases = [
        line
        for path in results
        if is_distributed(path)
        for line in databases_said(load_spec(path / SPEC_FILE))
    ]
    return Told((shards, *databases), f"oltplab report {named} (or oltplab merge {named} -o DIR)")


def databases_said(spec: Spec) -> list[str]:
    """Each operator's database the spec names, as its resource stands now: ready, or why
    not in the operator's words (a pod's image the node lacks, a claim never bound)."""
    sources = [(e.name, e.source) for e in spec.engines if isinstance(e.source, KubernetesSource)]
    if not sources:
        return []
    try:
        api = connect()
    except EnvironmentProblem as problem:
        return [f"the operators' databases not read: {problem}"]
    said = []
    for engine, source in sources:
        resource = source.kubernetes
        try:
            found = read_operated(api, resource.kind, resource.namespace, resource.name)
        except EngineError as problem:
            said.append(f"engine {engine}: {problem}")
            continue
        where = f"engine {engine}: Kubernetes {resource}"
        said.append(f"{where} not ready: {found.problem}" if found.problem else f"{where} ready")
    return said


def shards_rows(rows: list[dict[str, str]]) -> Rows:
    """Several results directories (shards, mostly), a row each; narrow enough for 80
    columns (the directories are listed under it when they are not one run's shards)."""
    counts = ("done", "failed", "left")
    columns = ("shard", "scheduler", "node", *counts, "state")
    shown_rows = []
    for row in rows:
        left = int(row.get(Status.PENDING, 0)) + int(row.get(Status.RUNNING, 0))
        shard = row.get("shard", "-")
        shown_rows.append(
            (
                shard if shard != "-" else Path(row["results"]).name,
                row.get("scheduler", "-"),
                row.get("node", "-"),
                row.get(Status.DONE, "0"),
                row.get(Status.FAILED, "0"),
                str(left),
                row.get("state", "-"),
            )
        )
    return Rows("Shards", columns, tuple(shown_rows), right=counts, folded=columns)


def results_rows(results: list[Path]) -> list[dict[str, str]]:
    """One row per shard of these results directories, distributed runs' or not."""
    rows = []
    for path in results:
        if is_distributed(path):
            rows += shard_rows(path)
        else:
            rows += [_row_of(shard) for shard in shards_of(path)]
    return rows


def _row_of(path: Path) -> dict[str, str]:
    ledger = Ledger.open(path, create=False)
    try:
        counts, runs, shard = ledger.counts(), ledger.runs(), ledger.meta("shard") or "-"
    finally:
        ledger.close()
    state = run_state(runs[-1].status, path) if runs else "never run"
    return {"results": str(path), "shard": shard, "scheduler": "-", "node": "-",
            "state": state, **{k: str(v) for k, v in counts.items()}}  # fmt: skip


def shard_rows(root: Path) -> list[dict[str, str]]:
    """One row per shard: its scheduler state and node, its cells, and where it stands,
    the scheduler's word first (a shard whose job still runs is not complete)."""
    distributed = read_distributed(root)
    spec = load_spec(root / SPEC_FILE)
    tasks = scheduler_named(distributed.scheduler).states(distributed)
    rows = []
    for index in range(1, distributed.shards + 1):
        state = shard_state(spec, distributed, index)
        task = tasks.get(index)
        job = task.said.lower() if task is not None and task.active else ""
        if state.complete and job:
            said = f"cells done; job {job}"
        elif state.complete:
            said = "complete"
        elif state.last_run is None:
            said = f"job {job}" if job else "not started"
        else:
            said = run_state(state.last_run, state.path)
        rows.append(
            {
                "results": str(state.path),
                "shard": f"{state.shard}",
                "scheduler": task.said if task else "-",
                "node": task.node if task else "-",
                "state": f"{said} ({state.planned} planned)",
                # A shard not started yet has all its cells still to run.
                **{k: str(v) for k, v in (state.counts or {Status.PENDING: state.planned}).items()},
            }
        )
    return rows
