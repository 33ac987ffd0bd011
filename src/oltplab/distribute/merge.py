"""Shards made one results directory: one ledger, the raw files in the 2026 layout, run.json
with every machine's facts, and each machine's canaries.

Refused, each with one line: a directory that is not a shard, shards of different specs
or cut differently, two shards holding the same done cell, a shard whose run.json is
missing or disagrees with its ledger (spec, digest, an engine's binary or archive) or with
another shard's, a shard whose ledger says other figures than its raw sysbench outputs, and
an output inside a shard. The merge is written beside the output and renamed into place at
the end, so a refused or failed one leaves nothing behind.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from oltplab.analysis.comparability import alike_notes, unlike
from oltplab.base.asking import argument, output_option
from oltplab.base.errors import OltplabError
from oltplab.base.telling import Told
from oltplab.distribute.layout import shards_of
from oltplab.importers.own import raw_outputs_disagree
from oltplab.store.directory import LOCK, REBUILD_SCRATCH, RUN_STATE, WORK, ResultsDir
from oltplab.store.files import write_atomic
from oltplab.store.ledger import Ledger
from oltplab.store.outputs import is_temporary
from oltplab.store.provenance import load_run_json, redact_spec
from oltplab.store.rows import CellRow
from oltplab.store.schema import CELL_RESULT_TABLES, SCHEMA, SCHEMA_VERSION
from oltplab.store.status import Status

# Tables copied cell by cell, with the cell's new id.


@dataclass(frozen=True)
class ShardDir:
    path: Path
    shard: str  # "K/N"
    block: str
    spec_digest: str
    spec: str
    machines: dict[str, str]  # cell key -> the machine that measured it
    done: set[str]
    binaries: dict[str, str]  # engine -> the sha256 of the binary that measured it
    archives: dict[str, str | None]  # engine -> the sha256 of the archive it came in, if any


def read_shard(path: Path) -> ShardDir:
    """A shard directory's identity; refused when no `oltplab run --shard` wrote it."""
    if not ResultsDir(path).ledger.is_file():
        raise OltplabError(f"{path}: not a shard: it holds no oltplab ledger")
    ledger = Ledger.open(path, create=False)
    try:
        meta = ledger.meta_items()
        if "shard" not in meta:
            raise OltplabError(
                f"{path}: not a shard: no `oltplab run --shard K/N` wrote it (merge takes "
                "shard directories; report and export read other results directories directly)"
            )
        machines = ledger.machines()
        cells = ledger.cells()
        engines = ledger.engines()
    finally:
        ledger.close()
    done = {row.key for row in cells if row.status == Status.DONE}
    binaries = {name: row.binary_sha256 for name, row in engines.items() if row.binary_sha256}
    archives = {name: row.archive_sha256 for name, row in engines.items()}
    shard = ShardDir(
        path, meta["shard"], meta.get("block", ""), meta.get("spec_digest", ""),
        meta.get("spec", ""), machines, done, binaries, archives,
    )  # fmt: skip
    _check_run_json(shard)
    _check_raw_outputs(shard, cells)
    return shard


def _check_run_json(shard: ShardDir) -> None:
    """The shard's run.json tells the same spec and binaries as its ledger."""
    where = ResultsDir(shard.path).run_json
    if not where.is_file():
        raise OltplabError(
            f"{where}: missing; without it the shard's host and binaries are unknown, so it "
            "is not merged (rerun the shard, or report on it alone)"
        )
    record = load_run_json(where)
    said = record.spec
    if said is None or said.digest != shard.spec_digest or said.text != redact_spec(shard.spec):
        raise OltplabError(
            f"{where}: its spec is not the one its ledger was run with (digest "
            f"{shard.spec_digest[:12]}); the file was changed, so the shard is not merged"
        )
    for what, found in _identities(shard):
        for engine, sha256 in sorted(found.items()):
            claimed = record.engines.get(engine, {}).get(f"{what}_sha256")
            if claimed != sha256:
                raise OltplabError(
                    f"{where}: engine {engine} {what} sha256 {str(claimed)[:12]}, but the "
                    f"ledger recorded {str(sha256)[:12]}; the file was changed, so the shard is "
                    "not merged"
                )


def _identities(shard: ShardDir) -> list[tuple[str, dict[str, str | None]]]:
    """What each engine was measured with, as run.json names it: its binary, its archive."""
    return [("binary", dict(shard.binaries)), ("archive", shard.archives)]


def _check_raw_outputs(shard: ShardDir, cells: list[CellRow]) -> None:
    problem = raw_outputs_disagree(shard.path, shard.spec, cells)
    if problem is not None:
        raise OltplabError(f"{problem}, so the shard is not merged")


def check_shards(shards: list[ShardDir]) -> None:
    first = shards[0]
    for other in shards[1:]:
        if other.spec_digest != first.spec_digest:
            raise OltplabError(
                f"{other.path}: a shard of another spec (digest {other.spec_digest[:12]}) than "
                f"{first.path} ({first.spec_digest[:12]}); merge shards of one spec"
            )
        if (other.shard.split("/")[1], other.block) != (first.shard.split("/")[1], first.block):
            raise OltplabError(
                f"{other.path}: shard {other.shard} cut by {other.block}, but {first.path} is "
                f"shard {first.shard} cut by {first.block}; merge shards of one cut"
            )
    known: dict[tuple[str, str], tuple[str | None, Path]] = {}
    for shard in shards:
        for what, found in _identities(shard):
            for engine, sha256 in sorted(found.items()):
                earlier, where = known.setdefault((what, engine), (sha256, shard.path))
                if earlier != sha256:
                    raise OltplabError(
                        f"{shard.path}: measured engine {engine} with {what} sha256 "
                        f"{str(sha256)[:12]}, {where} with {str(earlier)[:12]}; merge shards of "
                        "the same binaries"
                    )
    seen: dict[str, Path] = {}
    for shard in shards:
        for key in sorted(shard.done):
            if key in seen:
                raise OltplabError(
                    f"{shard.path}: holds done cell {key.replace('|', ' ')}, which {seen[key]} "
                    "holds too; merge each cell once"
                )
            seen[key] = shard.path


@dataclass(frozen=True, kw_only=True)
class MergeAsked:
    shards: list[Path] = argument(
        "Shard results directories, a distributed run's directory, or a results volume "
        "holding shard-K folders (Kubernetes).",
        "SHARDS",
    )
    output: Path = output_option("The merged results directory.", dataclasses.MISSING)


def merged(asked: MergeAsked) -> Told:
    """The shards named, or those of each run or volume named, merged into --output: how
    many, their done cells, and the machines that measured them."""
    paths = [shard for path in asked.shards for shard in shards_of(path)]
    shards = merge(paths, asked.output)
    # One spec is merge's own rule; each shard's machine differs by design.
    notes = alike_notes(unlike(paths, refuse=False, expected=("host",)))
    machines = sorted({m for s in shards for m in s.machines.values() if m})
    return Told(
        (
            *notes,
            f"{asked.output}: {len(shards)} shard(s) merged, {sum(len(s.done) for s in shards)} "
            f"done cell(s), measured on {', '.join(machines) or 'one machine'}",
        ),
        f"oltplab report {asked.output}",
    )


def merge(paths: list[Path], output: Path) -> list[ShardDir]:
    """The shards into `output`, which must not hold results yet nor be in a shard."""
    for path in paths:
        if output.resolve().is_relative_to(path.resolve()):
            raise OltplabError(
                f"-o {output}: inside the shard {path}; merge into a folder outside every shard"
            )
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise OltplabError(f"-o {output}: already exists; merge into a new directory")
    shards = [read_shard(p.resolve()) for p in paths]
    check_shards(shards)
    output.parent.mkdir(parents=True, exist_ok=True)
    making = Path(tempfile.mkdtemp(prefix=f".{output.name}.merging-", dir=output.parent))
    try:
        _merge_ledgers(shards, making)
        for shard in shards:
            _copy_files(shard, making)
        _run_json(shards, making)
        Ledger.open(making).close()  # checked, and its journal seeded from what it holds
        making.chmod(0o755)  # mkdtemp's 0700 is not what a results directory gets
        making.rename(output)
    except BaseException:
        shutil.rmtree(making, ignore_errors=True)
        raise
    return shards


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def _merge_ledgers(shards: list[ShardDir], output: Path) -> None:
    db = sqlite3.connect(ResultsDir(output).ledger, isolation_level=None)
    try:
        db.executescript(SCHEMA)
        db.execute("PRAGMA foreign_keys=ON")
        db.execute("BEGIN")
        first = shards[0]
        machines: dict[str, str] = {}
        meta = {
            "schema_version": str(SCHEMA_VERSION),
            "spec": first.spec,
            "spec_digest": first.spec_digest,
            "block": first.block,
            "merged_from": json.dumps([f"{s.path} (shard {s.shard})" for s in shards]),
        }
        for shard in shards:
            db.execute("ATTACH DATABASE ? AS shard", (str(ResultsDir(shard.path).ledger),))
            runs = _copy_runs(db)
            db.execute(
                f"INSERT OR IGNORE INTO engines SELECT {', '.join(_columns(db, 'engines'))}"
                " FROM shard.engines"
            )
            db.execute("INSERT OR REPLACE INTO variables SELECT * FROM shard.variables")
            for key, machine in shard.machines.items():
                if key in shard.done or key not in machines:
                    machines[key] = machine
            _copy_cells(db, shard, runs)
            db.execute("COMMIT")
            db.execute("DETACH DATABASE shard")
            db.execute("BEGIN")
        meta["cell_machines"] = json.dumps(machines, sort_keys=True)
        db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", meta.items())
        db.execute("COMMIT")
    finally:
        db.close()


def _copy_runs(db: sqlite3.Connection) -> dict[int, int]:
    """The shard's runs, numbered after those already merged: old id -> new id."""
    offset = db.execute("SELECT COALESCE(MAX(id), 0) FROM runs").fetchone()[0]
    ids = {old: old + offset for (old,) in db.execute("SELECT id FROM shard.runs")}
    columns = [c for c in _columns(db, "runs") if c != "id"]
    db.execute(
        f"INSERT INTO runs (id, {', '.join(columns)})"
        f" SELECT id + ?, {', '.join(columns)} FROM shard.runs",
        (offset,),
    )
    return ids


def _copy_cells(db: sqlite3.Connection, shard: ShardDir, runs: dict[int, int]) -> None:
    columns = [c for c in _columns(db, "cells") if c not in ("id", "run_id")]
    names = ", ".join(columns)
    existing = dict(db.execute("SELECT key, status FROM cells"))
    for row in db.execute(f"SELECT id, run_id, {names} FROM shard.cells").fetchall():
        old_id, run_id, values = row[0], row[1], row[2:]
        key, status = values[columns.index("key")], values[columns.index("status")]
        if key in existing:
            if existing[key] == Status.DONE or status != Status.DONE:
                continue  # another shard measured it; this one only planned or failed it
            db.execute("DELETE FROM cells WHERE key = ?", (key,))
        cursor = db.execute(
            f"INSERT INTO cells (run_id, {names}) VALUES (?{', ?' * len(columns)})",
            (runs.get(run_id), *values),
        )
        new_id = cursor.lastrowid
        for table in CELL_RESULT_TABLES:
            rest = [c for c in _columns(db, table) if c != "cell_id"]
            db.execute(
                f"INSERT INTO {table} (cell_id, {', '.join(rest)})"
                f" SELECT ?, {', '.join(rest)} FROM shard.{table} WHERE cell_id = ?",
                (new_id, old_id),
            )


def _copy_files(shard: ShardDir, output: Path) -> None:
    """Raw outputs, telemetry and configuration files, in their places; each machine's
    canaries and log under its shard's name."""
    name = shard.path.name
    source, target = ResultsDir(shard.path), ResultsDir(output)
    # The shard's own state is merged (the ledger) or kept apart (logs, canaries), never copied.
    for item in sorted(shard.path.iterdir()):
        if (
            item.name in RUN_STATE
            or item.name.startswith(REBUILD_SCRATCH)
            or is_temporary(item.name)
        ):
            continue
        if item.is_dir():
            shutil.copytree(item, output / item.name, dirs_exist_ok=True)
        elif not (output / item.name).exists():
            shutil.copy2(item, output / item.name)
    if source.canary.is_dir():
        for moment in sorted(p for p in source.canary.iterdir() if p.is_dir()):
            shutil.copytree(
                moment,
                target.canary_run(moment.name, name),
                ignore=shutil.ignore_patterns(WORK, LOCK),
                symlinks=True,
            )
    if source.log.is_file():
        target.shard_log(name).parent.mkdir(exist_ok=True)
        shutil.copy2(source.log, target.shard_log(name))


def _run_json(shards: list[ShardDir], output: Path) -> None:
    """The first shard's run.json (the spec, sysbench, workloads), with every machine's
    facts under `shards`."""
    found = [
        (shard, load_run_json(ResultsDir(shard.path).run_json).model_dump(exclude_none=True))
        for shard in shards
    ]
    records = [record for _, record in found]
    merged = dict(records[0])
    merged["shards"] = [
        {
            "shard": shard.shard,
            "from": str(shard.path),
            "machine": record.get("host", {}).get("machine"),
            "host": record.get("host", {}),
            "runs": record.get("runs", []),
            "engines": record.get("engines", {}),
        }
        for shard, record in found
    ]
    merged["engines"] = {k: v for r in records for k, v in r.get("engines", {}).items()}
    merged["configs"] = {}
    for record in records:
        for engine, tiers in record.get("configs", {}).items():
            merged["configs"].setdefault(engine, {}).update(tiers)
    merged["host"] = {"machines": sorted({str(s["machine"]) for s in merged["shards"]})}
    write_atomic(ResultsDir(output).run_json, json.dumps(merged, indent=2, sort_keys=True) + "\n")
