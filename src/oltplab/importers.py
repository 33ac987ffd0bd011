"""Import existing sysbench result trees into a ledger, so they go through the same analysis.

The layout is the 2026 report's (and oltplab's own):
`<scenario dir>/<db>/<version>/[run<K>_]Tier<tier>_<RW|RO>_<T>th.sysbench[.txt]`, with
`.vars.txt` files beside them. The scenario comes from the directory, never from the
`_RW_` in the file name (the report kept `_RW_` for read-only runs too).
Nothing is skipped silently: empty and truncated files become failed cells with flags.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from oltplab.errors import OltplabError
from oltplab.ledger import Ledger
from oltplab.plan import Cell, scenario_name
from oltplab.spec import NAME_PATTERN
from oltplab.store.files import sha256_file
from oltplab.sysbench import OutputParser, stall_notes, validity_flags

SCENARIO_DIRS = {
    "benchmark_logs": ("rw-local", "oltp_read_write"),
    "benchmark_logs_read_only": ("ro-local", "oltp_read_only"),
    "benchmark_remote_logs": ("rw-network", "oltp_read_write"),
    "benchmark_remote_logs_read_only": ("ro-network", "oltp_read_only"),
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


def scenario_of(directory: str) -> tuple[str, str] | None:
    """(scenario, workload) for a scenario directory name, or None for anything else."""
    if directory in SCENARIO_DIRS:
        return SCENARIO_DIRS[directory]
    for prefix, network in (("benchmark_logs_", False), ("benchmark_remote_logs_", True)):
        workload = directory.removeprefix(prefix)
        if directory.startswith(prefix) and re.match(NAME_PATTERN, workload):
            return scenario_name(workload, network), workload
    return None


def version_of(directory: str) -> str:
    """The version in a directory name: 12.1.2-MariaDB-ubu2404 -> 12.1.2, 8.0.45-36 stays."""
    match = re.match(r"^\d+(?:\.\d+)*(?:-\d+)?", directory)
    return match.group(0) if match else directory


def scenario_roots(source: Path) -> list[tuple[Path, str, str]]:
    if not source.is_dir():
        raise OltplabError(f"{source}: no such directory")
    if scenario_of(source.name):
        return [(source, *scenario_of(source.name))]  # type: ignore[misc]
    roots = [
        (p, *scenario_of(p.name))
        for p in sorted(source.iterdir())
        if p.is_dir() and scenario_of(p.name)
    ]
    if not roots:
        raise OltplabError(
            f"{source}: no sysbench result directories here; expected one or more of "
            + ", ".join(SCENARIO_DIRS)
            + " (or benchmark_logs_<workload>)"
        )
    return roots  # type: ignore[return-value]


@dataclass(frozen=True)
class VersionFolder:
    """One `<db>/<version>` folder of a scenario tree: an engine's files for a scenario."""

    path: Path
    family: str
    scenario: str
    workload: str


def scan_tree(source: Path) -> list[VersionFolder]:
    """Every engine folder of the tree, checked before anything is written: a tree that is
    not a sysbench result tree is refused with nothing stored."""
    folders = []
    for root, scenario, workload in scenario_roots(source.resolve()):
        for db_dir in sorted(p for p in root.iterdir() if p.is_dir()):
            family = FAMILIES.get(db_dir.name.lower())
            if family is None:
                raise OltplabError(
                    f"{db_dir}: unknown database directory {db_dir.name!r}; "
                    "expected mysql, mariadb, percona-server or postgresql"
                )
            folders += [
                VersionFolder(version_dir, family, scenario, workload)
                for version_dir in sorted(p for p in db_dir.iterdir() if p.is_dir())
            ]
    return folders


def import_tree(source: Path, ledger: Ledger) -> ImportReport:
    return import_folders(source, scan_tree(source), ledger)


def import_folders(source: Path, folders: list[VersionFolder], ledger: Ledger) -> ImportReport:
    """The scanned folders into the ledger; each cell in one transaction."""
    report = ImportReport(source.resolve())
    known = ledger.definitions()
    run_id = ledger.begin_run("import", {"imported_from": str(report.source)})
    for folder in folders:
        _import_version(ledger, report, known, folder)
    ledger.finish_run(run_id, "done")
    return report


def _import_version(
    ledger: Ledger, report: ImportReport, known: dict[str, str], folder: VersionFolder
) -> None:
    version = version_of(folder.path.name)
    engine = f"{folder.family}-{version}"
    ledger.record_engine(
        engine,
        family=folder.family,
        version=version,
        server_version=folder.path.name,
        source={"imported": str(folder.path)},
        artifact_dir=str(folder.path),
    )
    tiers = set()
    for path in sorted(folder.path.iterdir()):
        match = CELL_FILE.match(path.name)
        if not match or not path.is_file():
            continue
        cell = Cell(
            engine,
            match["tier"],
            folder.workload,
            int(match["threads"]),
            int(match["rep"] or 1),
            folder.scenario,
        )
        tiers.add(cell.tier)
        definition = "import:" + sha256_file(path)
        if known.get(cell.key) == definition:
            report.unchanged += 1
            continue
        if cell.key in known:
            report.updated += 1
            ledger.redefine(cell, definition)
        else:
            report.imported += 1
            ledger.register([(cell, definition)])
        known[cell.key] = definition
        flags = _import_file(ledger, cell, path)
        if flags:
            report.flagged.append(
                (
                    f"{engine} {folder.scenario} {cell.tier} {cell.threads}th"
                    f"{f' run {cell.repetition}' if cell.repetition > 1 else ''}",
                    ", ".join(flags),
                )
            )
    for path in sorted(folder.path.glob("*.vars.txt")):
        match = VARS_FILE.match(path.name)
        if match and match["tier"] in tiers:
            ledger.record_variables(engine, match["tier"], folder.workload, parse_variables(path))


def _import_file(ledger: Ledger, cell: Cell, path: Path) -> list[str]:
    """One sysbench output, streamed into the ledger line by line (memory stays flat
    however long the file); its validity flags."""
    parser = OutputParser()
    with ledger.recording(cell) as recording, path.open(errors="replace") as lines:
        recording.samples(i for line in lines if (i := parser.feed(line)) is not None)
        output = parser.finish()
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
