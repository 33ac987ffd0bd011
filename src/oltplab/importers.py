"""Import existing sysbench result trees into a ledger, so they go through the same analysis.

The layout is the 2026 report's (and oltplab's own):
`<scenario dir>/<db>/<version>/[run<K>_]Tier<tier>_<RW|RO>_<T>th.sysbench[.txt]`, with
`.vars.txt` files beside them. The scenario comes from the directory, never from the
`_RW_` in the file name (the report kept `_RW_` for read-only runs too).
Nothing is skipped silently: empty and truncated files become failed cells with flags.
"""

from __future__ import annotations

import multiprocessing
import os
import re
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from oltplab.errors import OltplabError
from oltplab.plan import Cell, Scenario
from oltplab.spec.fields import NAME_PATTERN
from oltplab.store.files import sha256_file
from oltplab.store.ledger import Ledger
from oltplab.sysbench.output import OutputParser, SysbenchOutput, read_blocks, read_output
from oltplab.sysbench.validity import stall_notes, validity_flags

SCENARIO_DIRS = {
    "benchmark_logs": Scenario("oltp_read_write"),
    "benchmark_logs_read_only": Scenario("oltp_read_only"),
    "benchmark_remote_logs": Scenario("oltp_read_write", network=True),
    "benchmark_remote_logs_read_only": Scenario("oltp_read_only", network=True),
}
CELL_FILE = re.compile(
    r"^(?:run(?P<rep>\d+)_)?Tier(?P<tier>[A-Za-z0-9.+-]+?)_(?:RW|RO)_(?P<threads>\d+)th"
    r"\.sysbench(?:\.txt)?$"
)
VARS_FILE = re.compile(
    r"^(?:run\d+_)?Tier(?P<tier>[A-Za-z0-9.+-]+?)(?:_[A-Za-z0-9_]+)?\.vars\.txt$"
)
FAMILIES = {
    "mysql": "mysql",
    "mariadb": "mariadb",
    "percona": "percona-server",
    "percona-server": "percona-server",
    "ps": "percona-server",
    "postgresql": "postgresql",
    "postgres": "postgresql",
    "pgsql": "postgresql",
}


@dataclass
class ImportReport:
    source: Path
    imported: int = 0
    updated: int = 0
    unchanged: int = 0
    flagged: list[tuple[str, str]] = field(default_factory=list)


def scenario_of(directory: str) -> Scenario | None:
    """The scenario a directory's name says, or None for anything else."""
    if directory in SCENARIO_DIRS:
        return SCENARIO_DIRS[directory]
    for prefix, network in (("benchmark_logs_", False), ("benchmark_remote_logs_", True)):
        workload = directory.removeprefix(prefix)
        if directory.startswith(prefix) and re.match(NAME_PATTERN, workload):
            return Scenario(workload, network)
    return None


def version_of(directory: str) -> str:
    """The version in a directory name: 12.1.2-MariaDB-ubu2404 -> 12.1.2, 8.0.45-36 stays."""
    match = re.match(r"^\d+(?:\.\d+)*(?:-\d+)?", directory)
    return match.group(0) if match else directory


def scenario_roots(source: Path) -> list[tuple[Path, Scenario]]:
    if not source.is_dir():
        raise OltplabError(f"{source}: no such directory")
    if (scenario := scenario_of(source.name)) is not None:
        return [(source, scenario)]
    roots = [
        (p, scenario)
        for p in sorted(source.iterdir())
        if p.is_dir() and (scenario := scenario_of(p.name)) is not None
    ]
    if not roots:
        raise OltplabError(
            f"{source}: no sysbench result directories here; expected one or more of "
            + ", ".join(SCENARIO_DIRS)
            + " (or benchmark_logs_<workload>)"
        )
    return roots


@dataclass(frozen=True)
class VersionFolder:
    """One `<db>/<version>` folder of a scenario tree: an engine's files for a scenario."""

    path: Path
    family: str
    scenario: Scenario


def scan_tree(source: Path) -> list[VersionFolder]:
    """Every engine folder of the tree, checked before anything is written: a tree that is
    not a sysbench result tree is refused with nothing stored."""
    folders = []
    for root, scenario in scenario_roots(source.resolve()):
        for db_dir in sorted(p for p in root.iterdir() if p.is_dir()):
            family = FAMILIES.get(db_dir.name.lower())
            if family is None:
                raise OltplabError(
                    f"{db_dir}: unknown database directory {db_dir.name!r}; "
                    "expected mysql, mariadb, percona-server or postgresql"
                )
            folders += [
                VersionFolder(version_dir, family, scenario)
                for version_dir in sorted(p for p in db_dir.iterdir() if p.is_dir())
            ]
    return folders


def import_tree(source: Path, ledger: Ledger) -> ImportReport:
    return import_folders(source, scan_tree(source), ledger)


def import_folders(source: Path, folders: list[VersionFolder], ledger: Ledger) -> ImportReport:
    """The scanned folders into the ledger; each version folder in one transaction."""
    report = ImportReport(source.resolve())
    known = ledger.definitions()
    planned = [(folder, _cell_files(folder)) for folder in folders]
    changed = [f.path for _, files in planned for f in files if known.get(f.cell) != f.digest]
    run_id = ledger.begin_run("import", {"imported_from": str(report.source)})
    with ParsedAhead(changed) as parsed:
        for folder, files in planned:
            with ledger.batch():
                _import_version(ledger, report, known, folder, files, parsed)
    ledger.finish_run(run_id, "done")
    return report


@dataclass(frozen=True)
class CellFile:
    cell: Cell
    path: Path
    digest: str  # the cell's definition: the file's content


def _engine_name(folder: VersionFolder) -> str:
    return f"{folder.family}-{version_of(folder.path.name)}"


def _cell_files(folder: VersionFolder) -> list[CellFile]:
    found = []
    for path in sorted(folder.path.iterdir()):
        match = CELL_FILE.match(path.name)
        if match and path.is_file():
            cell = Cell(
                _engine_name(folder),
                match["tier"],
                folder.scenario.workload,
                int(match["threads"]),
                int(match["rep"] or 1),
                folder.scenario.network,
            )
            found.append(CellFile(cell, path, "import:" + sha256_file(path)))
    return found


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


def _import_version(
    ledger: Ledger,
    report: ImportReport,
    known: dict[Cell, str],
    folder: VersionFolder,
    files: list[CellFile],
    parsed: ParsedAhead,
) -> None:
    engine = _engine_name(folder)
    ledger.record_engine(
        engine,
        family=folder.family,
        version=version_of(folder.path.name),
        server_version=folder.path.name,
        source={"imported": str(folder.path)},
        artifact_dir=str(folder.path),
    )
    tiers = set()
    for found in files:
        cell = found.cell
        tiers.add(cell.tier)
        if known.get(cell) == found.digest:
            report.unchanged += 1
            continue
        if cell in known:
            report.updated += 1
            ledger.redefine(cell, found.digest)
        else:
            report.imported += 1
            ledger.register([(cell, found.digest)])
        known[cell] = found.digest
        flags = _import_file(ledger, cell, found.path, parsed.get(found.path))
        if flags:
            report.flagged.append(
                (
                    f"{engine} {folder.scenario.name} {cell.tier} {cell.threads}th"
                    f"{f' run {cell.repetition}' if cell.repetition > 1 else ''}",
                    ", ".join(flags),
                )
            )
    for path in sorted(folder.path.glob("*.vars.txt")):
        match = VARS_FILE.match(path.name)
        if match and match["tier"] in tiers:
            variables = parse_variables(path)
            ledger.record_variables(engine, match["tier"], folder.scenario.workload, variables)


def _import_file(
    ledger: Ledger, cell: Cell, path: Path, parsed: SysbenchOutput | None
) -> list[str]:
    """One sysbench output into the ledger: parsed ahead, or streamed a block of lines at
    a time (memory stays flat however long the file); its validity flags."""
    with ledger.recording(cell) as recording:
        if parsed is None:
            parser = OutputParser()
            with path.open(errors="replace") as lines:
                recording.samples(parser.feed(block) for block in read_blocks(lines))
            output = parser.finish()
        else:
            recording.samples([parsed.samples])
            output = parsed
        flags = validity_flags(output, None, 1)
        reason = None
        if output.summary is None:
            reason = "empty file" if output.empty else "no summary: the output is truncated"
        recording.finish(output.summary, flags, str(path), reason, stall_notes(output))
    return flags


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
