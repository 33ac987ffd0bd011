"""What the names in a result tree say: scenario folders, engine folders (family, version,
variant) and cell files (tier, threads, repetition, rate, and tokens kept as a variant).

The 2026 report's layout, and oltplab's own, is
`<scenario dir>/<db>/<version>/[run<K>_]Tier<tier>_<RW|RO>_<T>th.sysbench[.txt|.log]`, with
`.vars.txt` files beside. The scenario comes from the directory, never from the `_RW_` in
the file name (the report kept `_RW_` for read-only runs too). A name oltplab writes
(store/directory.py builds them all) is read by its whole pattern, so a tier keeps its `_`
and an open-loop cell its rate; in any other name, tokens beyond those
(`run1_5M_Tier12G_tp10_os2_RW_64th`) are kept, in order, as part of the cell's tier.
All pure: names in, typed values out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from oltplab.engines.families import aliases
from oltplab.plan import Scenario
from oltplab.spec.catalog import UNKNOWN_FAMILY
from oltplab.spec.fields import NAME_PATTERN
from oltplab.store.directory import (
    AGAIN,
    CELL_STEM,
    CNF,
    LOCAL_LOGS,
    READ_ONLY,
    READ_WRITE,
    REMOTE_LOGS,
    REPETITION,
    SESSION_STEM,
    STATUS,
    SYSBENCH,
    SYSBENCH_OUTPUT,
    THREADS,
    TIER,
    VARS,
    WARM_UP_STEM,
    scenario_dir,
)

SCENARIO_DIRS = {
    scenario_dir(workload, network): Scenario(workload, network)
    for network in (False, True)
    for workload in ("oltp_read_write", "oltp_read_only")
}
CELL_SUFFIXES = (SYSBENCH_OUTPUT, f".{SYSBENCH}.log", f".{SYSBENCH}")
VARS_FILE = re.compile(
    rf"^(?:{REPETITION}\d+_)?{TIER}(?P<tier>[A-Za-z0-9.+-]+?)(?:_[A-Za-z0-9_]+)?\.{VARS}(?:\.txt)?$"
)
# Files that sit beside sysbench outputs in the 2026 layout and are not results.
COMPANIONS = re.compile(
    rf"\.({VARS}|{STATUS}|{CNF}|iostat|vmstat|mpstat|dstat|perf)(\.txt)?$|pt-mysql-summary|pt-summary"
)
# Packaging words in a version folder that say nothing about the engine's build.
_PACKAGING = re.compile(
    r"^(ubu|ubuntu|deb|debian|el|ol|rhel|centos|rocky|alma|amzn|sles|focal|jammy|noble|"
    r"bionic|bookworm|bullseye|buster|trixie|alpine)\d*$",
    re.IGNORECASE,
)
# An alias this short (`ps`) names a family as a whole database folder's name only, never
# as a word inside a version folder's name.
_SHORT_ALIAS = 2
# What a server adds to its version string while a log is on (`10.11.5-MariaDB-log`): a
# setting of the run, not a build, so no variant of the engine.
_SERVER_SUFFIXES = {"log"}
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


def scenario_of(directory: str) -> Scenario | None:
    """The scenario a directory's name says, or None for anything else."""
    if directory in SCENARIO_DIRS:
        return SCENARIO_DIRS[directory]
    for prefix, network in ((f"{LOCAL_LOGS}_", False), (f"{REMOTE_LOGS}_", True)):
        workload = directory.removeprefix(prefix)
        if directory.startswith(prefix) and re.match(NAME_PATTERN, workload):
            return Scenario(workload, network)
    return None


def version_of(directory: str) -> str:
    """The version in a directory name: 12.1.2-MariaDB-ubu2404 -> 12.1.2, 8.0.45-36 stays."""
    match = re.match(r"^\d+(?:\.\d+)*(?:-\d+(?![.\d]))?", directory)
    return match.group(0) if match else directory


def safe(text: str) -> str:
    """A name part that fits in engine names and cell keys."""
    return _UNSAFE.sub("-", text).strip("-") or "x"


@dataclass(frozen=True)
class EngineFolder:
    """An engine's results folder, `<db>/<version>`, and what its names say."""

    db: str  # the database folder: "mariadb", "mariadb-thp", "seekdb"
    folder: str  # the version folder: "11.8.6-MariaDB-ubu2404-thp"
    family: str  # a registered family (engines/families.py), or "unknown"
    version: str  # "11.8.6"
    variant: str  # "thp"; "" for none

    @property
    def label(self) -> str:
        """What names the engine's family: the family, or the folder of an unknown one."""
        return self.family if self.family != UNKNOWN_FAMILY else safe(self.db)

    @property
    def short_name(self) -> str:
        """family-version[-variant]: the name unless another folder would share it."""
        return "-".join(filter(None, (self.label, safe(self.version), self.variant)))

    @property
    def full_name(self) -> str:
        """The database and version folders' whole names."""
        return f"{safe(self.db)}-{safe(self.folder)}"


def family_of(db: str, folder: str) -> tuple[str, str]:
    """The family a database folder names and the variant it adds: `mariadb-thp` ->
    (mariadb, thp), `custom-mysql` -> (mysql, custom); an unknown folder whose version
    names a family (`11.4.5-MariaDB`) belongs to it; otherwise ("unknown", "")."""
    lowered = db.lower()
    named = aliases()
    if lowered in named:
        return named[lowered], ""
    for alias in sorted(named, key=len, reverse=True):
        for before, after in ((f"{alias}-", ""), (f"{alias}_", ""), ("", f"-{alias}")):
            if before and lowered.startswith(before):
                return named[alias], safe(db[len(before) :])
            if after and lowered.endswith(after):
                return named[alias], safe(db[: -len(after)])
    for word in re.split(r"[-_.]", folder.lower()):
        if word in named and len(word) > _SHORT_ALIAS:
            return named[word], safe(db)
    return UNKNOWN_FAMILY, ""


def engine_folder(db: str, folder: str) -> EngineFolder:
    family, db_variant = family_of(db, folder)
    version = version_of(folder)
    own = {db.lower(), *(w for w in re.split(r"[-_]", db.lower()))}
    # Words of a family's names (`percona-server`: percona, server) say nothing of a variant.
    family_words = {w for alias in aliases() for w in re.split(r"[-_]", alias)}
    tail = [
        word
        for word in re.split(r"[-_]", folder[len(version) :])
        if word
        and word.lower() not in family_words
        and word.lower() not in own
        and word.lower() not in _SERVER_SUFFIXES
        and not _PACKAGING.match(word)
    ]
    variant = "-".join(filter(None, (safe("-".join(tail)) if tail else "", db_variant)))
    return EngineFolder(db, folder, family, version, variant)


@dataclass(frozen=True)
class CellName:
    """What a cell file's name says."""

    tier: str  # with the name's other tokens: "12G-5M-tp10-os2"
    # The tiers whose `.vars.txt` describes the cell, the closest first: oltplab names them
    # by the whole tier, other trees by the Tier<...> token alone.
    vars_tiers: tuple[str, ...]
    threads: int
    repetition: int
    again: int = 0  # measured again (oltplab's `_againN`): N; the highest N supersedes
    rate: int = 0  # open loop (oltplab's `_<R>tps`): transactions a second offered


def is_cell_file(name: str) -> bool:
    return name.endswith(CELL_SUFFIXES)


def is_warm_up(name: str) -> bool:
    """An oltplab warm-up's output: kept beside its cells, never one of them."""
    stem = next((name.removesuffix(s) for s in CELL_SUFFIXES if name.endswith(s)), None)
    return stem is not None and WARM_UP_STEM.search(stem) is not None


def cell_name(name: str) -> CellName | str:
    """The cell a file name describes, or why it describes none."""
    stem = next((name.removesuffix(s) for s in CELL_SUFFIXES if name.endswith(s)), None)
    if stem is None:
        return f"not a sysbench output name (expected one ending in {', '.join(CELL_SUFFIXES)})"
    if (own := CELL_STEM.match(stem)) and int(own["threads"]) > 0:
        # Tier12G_tp10_RW_64th may be oltplab's tier "12G_tp10" or another tree's tier 12G
        # with a tp10 token, whose variables are in Tier12G.vars.txt.
        token = own["tier"].split("_")[0]
        return CellName(
            own["tier"],
            tuple(dict.fromkeys((own["tier"], token))),
            int(own["threads"]),
            int(own["repetition"] or 1),
            int(own["again"] or 0),
            int(own["rate"] or 0),
        )
    tier = threads = repetition = None
    again = 0
    others = []
    for token in stem.split("_"):
        if repetition is None and (m := re.fullmatch(rf"{REPETITION}(\d+)", token)):
            repetition = int(m.group(1))
        elif not again and (m := re.fullmatch(rf"{AGAIN}(\d+)", token)):
            again = int(m.group(1))
        elif tier is None and (m := re.fullmatch(rf"{TIER}([A-Za-z0-9.+-]+)", token)):
            tier = m.group(1)
        elif threads is None and (m := re.fullmatch(rf"(\d+){THREADS}", token)):
            threads = int(m.group(1))
        elif token not in (READ_WRITE, READ_ONLY) and token:
            others.append(safe(token))
    missing = [
        what for what, found in ((f"{TIER}<size>", tier), (f"<N>{THREADS}", threads)) if not found
    ]
    if tier is None or threads is None:
        return f"its name has no {' or '.join(missing)} token; describe the layout with --map"
    if threads < 1:
        return "its name says 0 threads"
    return CellName("-".join([tier, *others]), (tier,), threads, repetition or 1, again)


def vars_tier(name: str) -> str | None:
    """The tier a `.vars.txt` file holds SHOW VARIABLES for."""
    own = SESSION_STEM.match(name.removesuffix(f".{VARS}.txt"))
    if own and name.endswith(f".{VARS}.txt"):
        return own["tier"]
    match = VARS_FILE.match(name)
    return match["tier"] if match else None


def is_companion(name: str) -> bool:
    """A file oltplab writes beside a session's or a cell's output, `<stem>.<kind>.<ext>`
    (settings, variables, status, error log, each telemetry device's raw file): no output.
    A tier may hold a `.`, so each `.` in the name is tried as the stem's end."""
    for at in (i for i, char in enumerate(name) if char == "."):
        stem, kind, *ext = name[:at], *name[at + 1 :].split(".")
        if ext and kind != SYSBENCH and (CELL_STEM.match(stem) or SESSION_STEM.match(stem)):
            return True
    return False


def may_be_output(name: str, head: str) -> bool:
    """Whether a file looks like sysbench output: by its name, else by its first lines."""
    if COMPANIONS.search(name) or is_companion(name):
        return False
    return "sysbench" in name.lower() or any(
        line.startswith("sysbench ") for line in head.splitlines()[:5]
    )
