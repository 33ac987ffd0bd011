"""What an oltplab results directory recorded beside its raw outputs, so that importing
those outputs gives the run back: its engines' names and facts and its spec (run.json),
and its runs and each cell's flags, notes, reason and telemetry clock (journal.jsonl).

The numbers still come from the raw outputs; this is what no raw output holds: a cell's
interference flag and its client's CPU were judged while it ran, and the telemetry files
sit on a clock only the journal kept.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oltplab.base.errors import OltplabError
from oltplab.importers.naming import scenario_of
from oltplab.importers.rebuild import raw_output, workload_kinds
from oltplab.store.directory import ResultsDir
from oltplab.store.journal import Journal, Record
from oltplab.store.ledger import Ledger, now
from oltplab.store.provenance import RunJson, RunRecord, load_run_json
from oltplab.store.rows import CellRow
from oltplab.store.status import Status
from oltplab.workloads.kind import WorkloadKind

# The engine facts a ledger's engines table holds, as the run recorded them.
ENGINE_FACTS = (
    "family",
    "version",
    "server_version",
    "source",
    "binary_sha256",
    "archive_sha256",
)
# The ledger's meta keys that say what the run was asked: the others (a shard's, a merge's
# machines by cell) name cells as the run named them.
SPEC_META = ("spec", "spec_digest")


@dataclass(frozen=True)
class RecordedCell:
    """What the run recorded of one cell besides its output's numbers."""

    flags: list[str]
    notes: str
    reason: str | None
    clock: dict[str, Any] | None
    finished_at: str | None
    run: int | None  # the journal's run id
    started_at: str | None
    # The cell's earlier measurements, set aside (--rerun-disturbed): output and why, oldest first.
    earlier: tuple[tuple[Path, str], ...] = ()


@dataclass(frozen=True)
class RecordedEngine:
    name: str
    facts: dict[str, Any]


@dataclass
class OwnResults:
    """An oltplab results directory's records, keyed by what an import finds: engine
    folders by (database folder, version folder), cells by their output's path."""

    root: Path
    run_json: RunJson
    engines: dict[tuple[str, str], RecordedEngine] = field(default_factory=dict)
    runs: list[Record] = field(default_factory=list)  # `run` records, their end merged in
    cells: dict[Path, RecordedCell] = field(default_factory=dict)
    meta: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, WorkloadKind] = field(default_factory=dict)
    # Each cell's place in the run's registration, by (engine as the run named it, tier,
    # workload, network, threads, repetition, rate).
    order: dict[tuple[str, str, str, bool, int, int, int], int] = field(default_factory=dict)


def results_root(source: Path) -> Path | None:
    """The oltplab results directory a tree is (or, for one scenario folder, is in)."""
    for folder in (source, source.parent) if scenario_of(source.name) else (source,):
        if ResultsDir(folder).run_json.is_file():
            return folder
    return None


def own_results(source: Path, warnings: list[str]) -> OwnResults | None:
    """The records of the results directory the tree is, or None for any other tree; a
    run.json that cannot be read is said, and the tree imported from its files alone."""
    root = results_root(source)
    if root is None:
        return None
    try:
        record = load_run_json(ResultsDir(root).run_json)
    except OltplabError as problem:
        warnings.append(f"{problem}; imported from the raw files alone")
        return None
    own = OwnResults(root, record, kinds=workload_kinds(root))
    if record.spec is not None:
        own.meta = {"spec": record.spec.text, "spec_digest": record.spec.digest}
    for name, facts in record.engines.items():
        folder = Path(str(facts.get("artifact_dir") or ""))
        if len(folder.parts) == 2:
            engine = {k: facts[k] for k in ENGINE_FACTS if k in facts}
            own.engines[(folder.parts[0], folder.parts[1])] = RecordedEngine(name, engine)
    journal = Journal(root)
    if journal.exists():
        _read_journal(own, journal.read().records)
    return own


def raw_outputs_disagree(results: Path, spec: str | None, cells: Iterable[CellRow]) -> str | None:
    """The first done cell whose TPS in the ledger is not the one its raw sysbench output
    gives, in one line naming the file; None when they all agree. A ledger or a raw output
    edited after the run would otherwise be taken beside files that say otherwise. Sliced
    cells are left out: theirs is made of their slots, not of the output's summary."""
    if _order(spec) == "sliced":
        return None
    for row in cells:
        if row.status != Status.DONE:
            continue
        output = raw_output(results, row.artifact)
        found = output.summary.tps if output is not None and output.summary else None
        recorded = row.figure("tps")
        if found is None or recorded is None or not math.isclose(found, recorded, rel_tol=1e-6):
            return (
                f"{results}: cell {row.key.replace('|', ' ')}: the ledger says {recorded} tps, "
                f"its raw output {row.artifact} says {found}; the ledger does not match the "
                "raw files"
            )
    return None


def _order(spec: str | None) -> object:
    """The protocol's order a ledger's spec names; None when it names none or does not parse."""
    try:
        protocol = tomllib.loads(spec or "").get("protocol")
    except tomllib.TOMLDecodeError:
        return None
    return protocol.get("order") if isinstance(protocol, dict) else None


def check_raw_outputs(own: OwnResults, warnings: list[str]) -> None:
    """Refuses the results directory when its raw outputs say other figures than its own
    ledger, as `merge` refuses such a shard: an import takes the figures from the raw
    outputs, so a file changed after the run would pass for the run's. A directory without
    a ledger, or with one that cannot be read, is imported from its files, said."""
    if not ResultsDir(own.root).ledger.is_file():
        return
    try:
        ledger = Ledger.open(own.root, create=False)
        try:
            cells, spec = ledger.cells(), ledger.meta("spec")
        finally:
            ledger.close()
    except OltplabError as unreadable:
        warnings.append(f"{unreadable}; its raw outputs were not compared with it")
        return
    problem = raw_outputs_disagree(own.root, spec, cells)
    if problem is not None:
        raise OltplabError(f"{problem}, so nothing is imported")


def _read_journal(own: OwnResults, records: list[Record]) -> None:
    running: dict[str, Record] = {}
    runs: dict[int, Record] = {}
    latest: dict[str, Path] = {}  # each cell's last measurement yet
    set_aside: dict[str, tuple[tuple[Path, str], ...]] = {}
    by_name = {e.name: e for e in own.engines.values()}
    for record in records:
        kind = record.get("type")
        if kind == "meta" and record["key"] in SPEC_META:
            own.meta[record["key"]] = record["value"]
        elif kind == "run":
            runs[record["id"]] = dict(record)
        elif kind == "run_end" and record["id"] in runs:
            runs[record["id"]].update(status=record["status"], finished_at=record["finished_at"])
        elif kind == "engine" and record["name"] in by_name:
            # The journal has the facts as the ledger took them (run.json adds the disk).
            by_name[record["name"]].facts.update(
                {k: v for k, v in record["fields"].items() if k in ENGINE_FACTS}
            )
        elif kind == "cells":
            for engine, tier, workload, where, threads, repetition, _, *rate in record["cells"]:
                # Journals before ledger schema 6 hold the scenario's name where this is;
                # before schema 8 they had no rate (every cell closed loop).
                network = where if isinstance(where, bool) else where.endswith("-network")
                said = (engine, tier, workload, network, threads, repetition, *(rate or [0]))
                own.order.setdefault(said, len(own.order))
        elif kind == "running":
            running[record["key"]] = record
        elif kind in ("result", "failed") and record.get("artifact"):
            key, path = record["key"], own.root / record["artifact"]
            began = running.get(key, {})
            own.cells[path] = RecordedCell(
                list(record.get("flags", [])),
                record.get("notes", ""),
                record.get("reason"),
                record.get("clock"),
                record.get("finished_at"),
                began.get("run"),
                began.get("started_at"),
                set_aside.pop(key, ()),
            )
            latest[key] = path
        elif kind == "superseded" and record["key"] in latest:
            before = latest.pop(record["key"])
            set_aside[record["key"]] = (*own.cells[before].earlier, (before, record["why"]))
    own.runs = list(runs.values())


def record_import(
    results: Path,
    own: OwnResults,
    engines: dict[tuple[str, str], tuple[str, Path]],
    warnings: list[str],
) -> None:
    """The tree's run.json into the results directory's, under the names the import gave
    its engines (each engine folder: its name and where it is), and the import among the
    commands that wrote to the directory; a directory with a run.json of its own keeps its
    host, spec and sysbench, and one that cannot be read is left as it is."""
    path = ResultsDir(results).run_json
    theirs = own.run_json.model_dump(exclude_none=True)
    if path.is_file():
        try:
            data = load_run_json(path).model_dump(exclude_none=True)
        except OltplabError as problem:
            warnings.append(f"{problem}; left as it is, without {own.root}'s run.json")
            return
    else:
        data = {k: v for k, v in theirs.items() if k not in ("engines", "configs", "links", "runs")}
    for key, (name, folder) in engines.items():
        recorded = own.engines.get(key)
        if recorded is None:
            continue
        for part in ("engines", "configs", "links"):
            if recorded.name in theirs.get(part, {}):
                data.setdefault(part, {})[name] = theirs[part][recorded.name]
        if name in data.get("engines", {}):
            data["engines"][name] = {**data["engines"][name], "artifact_dir": str(folder)}
    for workload, facts in theirs.get("workloads", {}).items():
        data.setdefault("workloads", {}).setdefault(workload, facts)
    data["runs"] = [*data.get("runs", []), {"started_at": now(), "imported_from": str(own.root)}]
    RunRecord(results, data).save()
