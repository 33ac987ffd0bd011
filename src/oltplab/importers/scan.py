"""A result tree walked before anything is written: the engine folders and cell files it
holds, and every file that looks like sysbench output but could not be read as a cell,
with the reason."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from oltplab.base.errors import OltplabError
from oltplab.importers.mapping import LayoutMap, mapped_cell
from oltplab.importers.naming import (
    SCENARIO_DIRS,
    CellName,
    EngineFolder,
    cell_name,
    engine_folder,
    is_cell_file,
    is_warm_up,
    may_be_output,
    scenario_of,
    vars_tier,
)
from oltplab.plan import Scenario
from oltplab.spec.catalog import FAMILIES, UNKNOWN_FAMILY
from oltplab.store.directory import WORK

ELSEWHERE = (
    "not inside a <scenario>/<db>/<version>/ folder (benchmark_logs/mysql/8.0.45/...); "
    "describe the layout with --map"
)


@dataclass(frozen=True)
class FoundFile:
    path: Path
    tier: str
    vars_tiers: tuple[str, ...]  # the tiers as `.vars.txt` files name them, closest first
    workload: str
    network: bool
    threads: int
    repetition: int
    again: int = 0
    rate: int = 0

    @property
    def cell(self) -> tuple[str, str, bool, int, int, int]:
        return (self.tier, self.workload, self.network, self.threads, self.repetition, self.rate)


@dataclass
class EngineGroup:
    """One engine's files in one folder: what is imported in one transaction."""

    engine: EngineFolder
    path: Path
    named: str | None = None  # the name a mapping file gives; else the naming rule's
    files: list[FoundFile] = field(default_factory=list)
    variables: list[tuple[str, Path]] = field(default_factory=list)  # (tier, .vars.txt)

    @property
    def key(self) -> tuple[str, str]:
        """What identifies the engine: its database and version folder names."""
        return (self.engine.db, self.engine.folder)


@dataclass
class ScannedTree:
    source: Path
    groups: list[EngineGroup] = field(default_factory=list)
    unrecognised: list[tuple[Path, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    warm_ups: list[Path] = field(default_factory=list)
    superseded: list[tuple[Path, Path]] = field(default_factory=list)  # (earlier, rerun)

    @property
    def files(self) -> int:
        return sum(len(g.files) for g in self.groups)

    def nothing_found(self) -> str:
        """Why nothing can be imported from this tree, in one line."""
        if self.unrecognised:
            return (
                f"none of the {len(self.unrecognised)} file(s) listed above is a cell "
                "oltplab can read; for outputs in another layout, describe it with --map FILE "
                "(docs/tutorials/import-results.md: a mapping file)"
            )
        return (
            f"no sysbench outputs here; expected one or more of {', '.join(SCENARIO_DIRS)} "
            "(or benchmark_logs_<workload>) holding <db>/<version>/ folders, or a layout "
            "described with --map FILE"
        )


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as file:
            return file.read(512)
    except OSError:
        return b""


def _text(head: bytes) -> str:
    return head.decode("utf-8", errors="replace")


def _not_regular(path: Path) -> str | None:
    """Why a file cannot be read as an output at all (opening a FIFO waits for a writer)."""
    try:
        mode = path.stat().st_mode
    except OSError as problem:
        return f"cannot be read: {problem.strerror}"
    if stat.S_ISREG(mode):
        return None
    kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    return f"{kind}, not a regular file; skipped"


def _not_text(head: bytes) -> str | None:
    """Why a file named like an output is no sysbench output: sysbench writes text."""
    if b"\0" in head or _text(head).count("\ufffd") > len(head) // 20:
        return "binary content, not a sysbench output (which is text)"
    return None


def scan_tree(
    source: Path, layout: LayoutMap | None = None, results: Path | None = None
) -> ScannedTree:
    """Every engine folder and cell file of the tree (or those the mapping file names),
    leaving out the results folder an import writes to when it is inside the tree."""
    if source.exists() and not source.is_dir():
        raise OltplabError(
            f"{source}: is a file; expected a folder of sysbench outputs (a tree such as "
            "benchmark_logs/<engine>/<version>/, or a folder holding one)"
        )
    if not source.is_dir():
        raise OltplabError(f"{source}: no such directory")
    source = source.resolve()
    if results is not None and source.is_relative_to(results.resolve()):
        raise OltplabError(
            f"{source}: is inside the results folder {results} it would be imported into, "
            "and would be imported again on every import; give another --results"
        )
    tree = ScannedTree(source)
    visited = _mapped(tree, layout) if layout is not None else _laid_out(tree)
    for folder, folders, names in os.walk(source):
        if Path(folder) == source and WORK in folders:
            folders.remove(WORK)  # an oltplab run's scratch (datadirs, prepare output)
        if results is not None:
            folders[:] = [f for f in folders if Path(folder, f) != results.resolve()]
        for name in sorted(names):
            path = Path(folder) / name
            if path in visited:
                continue
            if (why := _not_regular(path)) is not None:
                tree.unrecognised.append((path, why))
            elif may_be_output(name, _text(_head(path))):
                tree.unrecognised.append(
                    (
                        path,
                        "matches no [[files]] pattern of the map"
                        if layout is not None
                        else ELSEWHERE,
                    )
                )
    tree.unrecognised.sort()
    return tree


def _roots(source: Path) -> list[tuple[Path, Scenario]]:
    if (scenario := scenario_of(source.name)) is not None:
        return [(source, scenario)]
    return [
        (p, scenario)
        for p in sorted(source.iterdir())
        if p.is_dir() and (scenario := scenario_of(p.name)) is not None
    ]


def _laid_out(tree: ScannedTree) -> set[Path]:
    """The 2026 layout: `<scenario dir>/<db>/<version>/<cell file>`."""
    visited: set[Path] = set()
    unknown: set[str] = set()
    for root, scenario in _roots(tree.source):
        for db_dir in sorted(p for p in root.iterdir() if p.is_dir()):
            for version_dir in sorted(p for p in db_dir.iterdir() if p.is_dir()):
                group = EngineGroup(engine_folder(db_dir.name, version_dir.name), version_dir)
                for path in sorted(p for p in version_dir.iterdir() if p.is_file()):
                    visited.add(path)
                    _take(tree, group, scenario, path)
                _latest_measurements(tree, group)
                if group.files:
                    tree.groups.append(group)
                    if group.engine.family == UNKNOWN_FAMILY:
                        unknown.add(db_dir.name)
    tree.warnings += [
        f"{db}: not a family oltplab knows ({', '.join(FAMILIES)}); "
        f"imported as family {UNKNOWN_FAMILY}, left out of version progressions"
        for db in sorted(unknown)
    ]
    return visited


def _latest_measurements(tree: ScannedTree, group: EngineGroup) -> None:
    """A cell measured again (oltplab's --rerun-disturbed) is its latest measurement; the
    earlier ones are set aside as the run that wrote them set them aside."""
    latest: dict[tuple[str, str, bool, int, int, int], FoundFile] = {}
    for found in group.files:
        if found.cell not in latest or found.again > latest[found.cell].again:
            latest[found.cell] = found
    for found in group.files:
        if latest[found.cell] is not found:
            tree.superseded.append((found.path, latest[found.cell].path))
    group.files = [f for f in group.files if latest[f.cell] is f]


def _take(tree: ScannedTree, group: EngineGroup, scenario: Scenario, path: Path) -> None:
    if is_warm_up(path.name):
        tree.warm_ups.append(path)
        return
    named = cell_name(path.name)
    if isinstance(named, CellName) and (why := _not_text(_head(path))) is not None:
        tree.unrecognised.append((path, why))
    elif isinstance(named, CellName):
        group.files.append(
            FoundFile(
                path,
                named.tier,
                named.vars_tiers,
                scenario.workload,
                scenario.network,
                named.threads,
                named.repetition,
                named.again,
                named.rate,
            )
        )
    elif (tier := vars_tier(path.name)) is not None:
        group.variables.append((tier, path))
    elif is_cell_file(path.name) or may_be_output(path.name, _text(_head(path))):
        tree.unrecognised.append((path, named))


def _mapped(tree: ScannedTree, layout: LayoutMap) -> set[Path]:
    visited: set[Path] = set()
    groups: dict[str, EngineGroup] = {}
    for folder, _, names in sorted(os.walk(tree.source)):
        for name in sorted(names):
            path = Path(folder) / name
            found = mapped_cell(layout, path.relative_to(tree.source).as_posix())
            if found is None:
                continue
            visited.add(path)
            if isinstance(found, str):
                tree.unrecognised.append((path, found))
                continue
            if (why := _not_regular(path) or _not_text(_head(path))) is not None:
                tree.unrecognised.append((path, why))
                continue
            if found.engine not in groups:
                engine = EngineFolder(found.engine, found.engine, found.family, found.version, "")
                groups[found.engine] = EngineGroup(engine, tree.source, named=found.engine)
            groups[found.engine].files.append(
                FoundFile(
                    path,
                    found.tier,
                    (found.tier,),
                    found.workload,
                    found.network,
                    found.threads,
                    found.repetition,
                )
            )
    tree.groups = list(groups.values())
    return visited
