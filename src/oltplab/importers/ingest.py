"""A scanned tree into a ledger, so existing results go through the same analysis.

Nothing is skipped silently: empty and truncated files become failed cells with their
reason, and each engine folder lands in one transaction (an oltplab results directory, whole
in one). An engine is identified by its database and version folder names: two folders never
become one engine. An oltplab results directory comes back as it ran: what its raw outputs
do not hold is taken from its run.json and journal (`own`).
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from oltplab.base import nofollow
from oltplab.base.wording import counted
from oltplab.importers.own import (
    OwnResults,
    RecordedCell,
    check_raw_outputs,
    own_results,
    record_import,
)
from oltplab.importers.scan import EngineGroup, FoundFile, ScannedTree
from oltplab.measure.judgement import judge
from oltplab.plan import Cell
from oltplab.store.directory import ResultsDir, stem_of
from oltplab.store.files import sha256_file
from oltplab.store.ledger import Ledger
from oltplab.store.lock import ResultsLock
from oltplab.store.rows import EngineRow
from oltplab.store.status import RunStatus
from oltplab.sysbench.output import OutputParser, SysbenchOutput, read_blocks
from oltplab.sysbench.reading import read_output
from oltplab.sysbench.transactions import KindResults
from oltplab.telemetry.collectors import TelemetryClock, queue_rows
from oltplab.telemetry.registry import telemetry_rows
from oltplab.workloads.kind import WorkloadKind


@dataclass
class ImportReport:
    source: Path
    imported: int = 0
    updated: int = 0
    unchanged: int = 0
    flagged: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    recorded: Path | None = None  # the oltplab results directory whose records came back


def _stored_folders(stored: dict[str, EngineRow]) -> dict[tuple[str, str], str]:
    """(database folder, version folder) -> engine name, for engines imported before."""
    found = {}
    for name, row in stored.items():
        try:
            source = json.loads(row.source)
        except (TypeError, ValueError):
            continue
        if isinstance(source, dict) and "imported" in source:
            path = Path(source["imported"])
            found[(source.get("db", path.parent.name), source.get("folder", path.name))] = name
        elif row.artifact_dir and Path(row.artifact_dir).is_absolute():
            # An oltplab run's engine keeps the run's source; its folder says where it was.
            path = Path(row.artifact_dir)
            found[(path.parent.name, path.name)] = name
    return found


def engine_names(
    groups: list[EngineGroup],
    stored: dict[str, EngineRow],
    recorded: dict[tuple[str, str], str] | None = None,
) -> tuple[dict[tuple[str, str], str], list[str]]:
    """Each folder's engine name, and what was said about the choice.

    A folder imported before keeps its name. Otherwise the name is the one the run that
    wrote the folder gave it (`recorded`, from its run.json), else family-version
    [-variant], unless another folder (in this tree or the ledger) would have it too: then
    each such folder is named by its whole folder name.
    """
    known = _stored_folders(stored)
    owner = {name: key for key, name in known.items()}
    names: dict[tuple[str, str], str] = {}
    wanted = {g.key: g for g in groups}
    for key, group in wanted.items():
        if group.named is not None:
            names[key] = group.named
        elif key in known:
            names[key] = known[key]
    fresh = {
        key: (recorded or {}).get(key) or g.engine.short_name
        for key, g in wanted.items()
        if key not in names
    }
    counts = Counter(fresh.values())
    said = []
    for key, name in fresh.items():
        taken = counts[name] > 1 or (name in stored and owner.get(name) != key)
        names[key] = wanted[key].engine.full_name if taken else name
        if taken:
            said.append(
                f"{key[0]}/{key[1]}: named {names[key]}, since another folder would also be {name}"
            )
    return names, said


def import_into(tree: ScannedTree, results: Path) -> ImportReport:
    """The scanned tree into the results directory's ledger, made if needed, holding the
    directory as a run does."""
    paths = ResultsDir(results)
    made = [] if paths.ledger.exists() else paths.ledger_files
    made += [] if paths.journal.exists() else [paths.journal]
    made += [] if paths.run_json.exists() else [paths.run_json]
    with ResultsLock(results):
        try:
            ledger = Ledger.open(results)
            try:
                return import_tree(tree, ledger)
            finally:
                ledger.close()
        except BaseException:
            # An import that fails leaves no half-made ledger, and the folder's other files as
            # they were (the lock takes its file, and the folder if it made it).
            for path in made:
                path.unlink(missing_ok=True)
            raise


def import_tree(tree: ScannedTree, ledger: Ledger) -> ImportReport:
    """The scanned tree into the ledger; each engine folder in one transaction, or an
    oltplab results directory whole."""
    report = ImportReport(tree.source, warnings=list(tree.warnings))
    own = own_results(tree.source, report.warnings)
    if own is not None:
        check_raw_outputs(own, report.warnings)  # before anything is written
    report.recorded = own.root if own is not None else None
    given = {key: engine.name for key, engine in own.engines.items()} if own else {}
    names, said = engine_names(tree.groups, ledger.engines(), given)
    report.warnings += said
    known = ledger.definitions()
    planned = [(group, _cell_files(group, names[group.key])) for group in tree.groups]
    changed = [f.path for _, files in planned for f in files if known.get(f.cell) != f.digest]
    # An oltplab run's cells are registered in the run's order, which its report's tables
    # keep, and land in one transaction with its runs; any other tree is one import run,
    # landing a folder at a time.
    whole = ledger.batch() if own is not None else contextlib.nullcontext()
    with ParsedAhead(changed) as parsed, whole:
        runs = _replay_runs(ledger, own) if own is not None else {}
        recorded = Recorded(own, runs)
        run_id = None if runs else ledger.begin_run("import", _import_provenance(tree.source, own))
        if own is not None:
            in_run_order = sorted(
                (f for _, files in planned for f in files), key=_run_order(own, tree.groups, names)
            )
            _register(ledger, known, in_run_order)
        for group, files in planned:
            with ledger.batch() if own is None else contextlib.nullcontext():
                if own is None:
                    _register(ledger, known, files)
                _import_group(
                    ledger, report, known, group, names[group.key], files, parsed, recorded
                )
        if own is not None and (report.imported or report.updated):
            for key, value in own.meta.items():
                if ledger.meta(key) is None:
                    ledger.set_meta(key, value)
    if run_id is not None:
        ledger.finish_run(run_id, RunStatus.DONE)
    if own is not None and (report.imported or report.updated):
        folders = {g.key: (names[g.key], g.path) for g in tree.groups}
        record_import(ledger.path.parent, own, folders, report.warnings)
    return report


def _run_order(
    own: OwnResults, groups: list[EngineGroup], names: dict[tuple[str, str], str]
) -> Callable[[CellFile], int]:
    """Where a cell file's cell stood in the run's registration (cells the run did not
    register last)."""
    as_run = {
        names[g.key]: engine.name for g in groups if (engine := own.engines.get(g.key)) is not None
    }

    def position(found: CellFile) -> int:
        cell = found.cell
        said = (as_run.get(cell.engine, cell.engine), cell.tier, cell.workload, cell.network,
                cell.threads, cell.repetition, cell.rate)  # fmt: skip
        return own.order.get(said, len(own.order))

    return position


def _register(ledger: Ledger, known: dict[Cell, str], files: list[CellFile]) -> None:
    """The cells not yet in the ledger, in the order given."""
    new = [(f.cell, f.digest) for f in files if f.cell not in known]
    if new:
        ledger.register(new)


def _import_provenance(source: Path, own: OwnResults | None) -> dict[str, object]:
    """An import's run: where from, and the machine when the tree's run.json says it."""
    said: dict[str, object] = {"imported_from": str(source)}
    if own is not None and own.run_json.host:
        host = own.run_json.host
        said.update(host=host, machine=host.get("machine") or host.get("hostname"))
    return said


def _replay_runs(ledger: Ledger, own: OwnResults) -> dict[int, int]:
    """The tree's runs into the ledger, each once (importing it again finds them there):
    the tree's run id -> the ledger's."""
    stored = {(run.started_at, json.dumps(run.provenance, sort_keys=True)): run.id
              for run in ledger.runs()}  # fmt: skip
    ids = {}
    for run in own.runs:
        said = (run["started_at"], json.dumps(run["provenance"], sort_keys=True))
        if said in stored:
            ids[run["id"]] = stored[said]
            continue
        ids[run["id"]] = ledger.begin_run(
            run["spec_digest"], run["provenance"], started_at=run["started_at"]
        )
        # A run the journal never saw end was cut off: its process is gone.
        status = run.get("status", RunStatus.INTERRUPTED)
        ledger.finish_run(ids[run["id"]], status, finished_at=run.get("finished_at"))
    return ids


@dataclass(frozen=True)
class Recorded:
    """What the tree's own records add to its files (nothing for a tree not oltplab's)."""

    own: OwnResults | None
    runs: dict[int, int]  # the tree's run id -> the ledger's

    def cell(self, path: Path) -> RecordedCell | None:
        return self.own.cells.get(path) if self.own is not None else None

    def kind(self, workload: str) -> WorkloadKind | None:
        return self.own.kinds.get(workload) if self.own is not None else None


@dataclass(frozen=True)
class CellFile:
    cell: Cell
    path: Path
    digest: str  # the cell's definition: the file's content
    vars_tiers: tuple[str, ...]


def _cell_files(group: EngineGroup, engine: str) -> list[CellFile]:
    return [
        CellFile(_cell(engine, found), found.path, "import:" + sha256_file(found.path),
                 found.vars_tiers)
        for found in group.files
    ]  # fmt: skip


def _cell(engine: str, found: FoundFile) -> Cell:
    return Cell(
        engine,
        found.tier,
        found.workload,
        found.threads,
        found.repetition,
        found.network,
        found.rate,
    )


# Files up to this size are parsed in worker processes, whole; larger ones stream through
# this process a block at a time, so that memory stays flat however long a run was.
PARSED_AHEAD_BELOW = 16 * 2**20


class ParsedAhead:
    """sysbench outputs parsed ahead of their import, in worker processes (one per core);
    the ledger is written by this process only, in order."""

    def __init__(self, paths: list[Path]) -> None:
        self._queue = deque(p for p in paths if p.stat().st_size < PARSED_AHEAD_BELOW)
        workers = len(os.sched_getaffinity(0))
        self._window = 4 * workers
        self._pending: dict[Path, Future[SysbenchOutput]] = {}
        self._pool = None
        if workers > 1 and len(self._queue) > 1:
            fork = multiprocessing.get_context("fork")
            self._pool = ProcessPoolExecutor(workers, mp_context=fork)
        self._fill()

    def __enter__(self) -> ParsedAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)

    def _fill(self) -> None:
        while self._pool and self._queue and len(self._pending) < self._window:
            path = self._queue.popleft()
            self._pending[path] = self._pool.submit(read_output, path)

    def get(self, path: Path) -> SysbenchOutput | None:
        """The parsed file; None when it is to be streamed here."""
        future = self._pending.pop(path, None)
        self._fill()
        return None if future is None else future.result()


def _import_group(
    ledger: Ledger,
    report: ImportReport,
    known: dict[Cell, str],
    group: EngineGroup,
    engine: str,
    files: list[CellFile],
    parsed: ParsedAhead,
    recorded: Recorded,
) -> None:
    variables = {tier: parse_variables(path) for tier, path in group.variables}
    _record_engine(ledger, group, engine, variables, recorded)
    for found in files:
        cell = found.cell
        if known.get(cell) == found.digest:
            report.unchanged += 1
            continue
        if cell in known:
            report.updated += 1
            ledger.redefine(cell, found.digest)
        else:
            report.imported += 1  # registered before (_register)
        known[cell] = found.digest
        said = recorded.cell(found.path)
        for earlier, why in said.earlier if said is not None else ():
            if earlier.is_file():
                _measurement(ledger, cell, earlier, None, recorded, report.warnings)
                ledger.supersede(cell, why)
        output = parsed.get(found.path)
        flags = _measurement(ledger, cell, found.path, output, recorded, report.warnings)
        if flags:
            rep = f" run {cell.repetition}" if cell.repetition > 1 else ""
            where = (
                f"{engine} {cell.scenario.name} {cell.tier} {counted(cell.threads, 'thread')}{rep}"
            )
            report.flagged.append((where, ", ".join(flags)))
    for found in files:
        if tier := next((t for t in found.vars_tiers if t in variables), None):
            ledger.record_variables(engine, found.cell.tier, found.cell.workload, variables[tier])


def _record_engine(
    ledger: Ledger,
    group: EngineGroup,
    engine: str,
    variables: dict[str, dict[str, str]],
    recorded: Recorded,
) -> None:
    """The engine as the run that set it up recorded it, or as its folders say."""
    own = recorded.own.engines.get(group.key) if recorded.own is not None else None
    said = next(((t, v["version"]) for t, v in sorted(variables.items()) if "version" in v), None)
    source = {"imported": str(group.path), "db": group.engine.db, "folder": group.engine.folder}
    if group.engine.variant:
        source["variant"] = group.engine.variant
    if said is not None:
        source["server_version_from"] = f"SELECT VERSION() (Tier{said[0]} variables)"
    facts = {
        "family": group.engine.family,
        "version": group.engine.version,
        "server_version": said[1] if said else None,
        "source": source,
        **(own.facts if own is not None else {}),
    }
    ledger.record_engine(engine, **facts, artifact_dir=str(group.path))


def _measurement(
    ledger: Ledger,
    cell: Cell,
    path: Path,
    output: SysbenchOutput | None,
    recorded: Recorded,
    warnings: list[str],
) -> list[str]:
    """One measurement of the cell, in the run that made it when its records say."""
    said = recorded.cell(path)
    if said is not None and said.run in recorded.runs:
        ledger.mark_running(cell, recorded.runs[said.run], started_at=said.started_at)
    return _import_file(ledger, cell, path, output, said, recorded.kind(cell.workload), warnings)


def _import_file(
    ledger: Ledger,
    cell: Cell,
    path: Path,
    parsed: SysbenchOutput | None,
    said: RecordedCell | None,
    kind: WorkloadKind | None,
    warnings: list[str],
) -> list[str]:
    """One sysbench output into the ledger: parsed ahead, or streamed a block of lines at
    a time (memory stays flat however long the file); its flags: those the run that wrote
    it recorded, else those the file shows."""
    with ledger.recording(cell) as recording:
        if parsed is None:
            parser = OutputParser()
            with path.open(errors="replace") as lines:
                recording.samples(parser.feed(block) for block in read_blocks(lines))
            output = parser.finish()
        else:
            recording.samples([parsed.samples])
            output = parsed
        outcome = judge(
            output,
            None,
            str(path),
            telemetry=tuple(_telemetry(path, said, warnings) + queue_rows(output.queue)),
            kind_results=_kind_results(path, kind, warnings),
        )
        if said is not None:  # the verdict the run that wrote it gave, and when
            outcome = replace(
                outcome,
                flags=tuple(said.flags),
                reason=said.reason,
                notes=said.notes,
                clock=said.clock,
                finished_at=said.finished_at,
            )
        recording.finish(outcome)
    return list(outcome.flags)


def _kind_results(path: Path, kind: WorkloadKind | None, warnings: list[str]) -> KindResults | None:
    """The figures the workload's kind reads from the output (TPC-C's NOPM and mix)."""
    if kind is None:
        return None
    try:
        return kind.results(nofollow.read_text(path))
    except OSError as problem:
        warnings.append(f"{path}: its workload kind's figures not read: {problem.strerror}")
        return None


def _telemetry(
    path: Path, said: RecordedCell | None, warnings: list[str]
) -> list[tuple[str, str, int, float]]:
    """The series of the cell's telemetry files, read on the clock its run recorded."""
    if said is None or not said.clock:
        return []
    clock = TelemetryClock(**{**said.clock, "sources": tuple(said.clock["sources"])})
    try:
        return telemetry_rows(stem_of(path), clock)
    except OSError as problem:
        warnings.append(f"{path}: telemetry series not read: {problem.strerror}")
        return []


def parse_variables(path: Path) -> dict[str, str]:
    """SHOW VARIABLES as `mysql -e` prints it: tab-separated, or an ASCII table."""
    values = {}
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("+") or not line.strip():
            continue
        parts = [p.strip() for p in line.strip("|").split("|")] if "|" in line else line.split("\t")
        if len(parts) < 2 or parts[0] in ("Variable_name", ""):
            continue
        values[parts[0]] = parts[1].strip()
    return values
