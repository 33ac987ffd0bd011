"""Datasets prepared once for many machines: a store of datadir snapshots on shared storage.

The first machine to need an engine's dataset prepares it and publishes the snapshot (a tar
with its sha256, the engine binary's sha256 and the dataset it holds, and the accounts'
secrets the datadir was made with); every other machine that needs the same engine and
dataset takes it from the store instead of running `sysbench prepare` again. A lock on the
entry (an OS lock, as NFS keeps them) makes the others wait while one prepares; a published
entry never changes, so machines copy it at once, holding no lock.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from oltplab.base import nofollow, untar
from oltplab.base.errors import EngineError
from oltplab.engines.server import BENCH_SECRET, CONTROL_SECRET
from oltplab.store.files import write_atomic, write_secret

SECRETS = (CONTROL_SECRET, BENCH_SECRET)
MANIFEST = "manifest.json"
ARCHIVE = "datadir.tar"


class _Hashing:
    """A file read (or written) through, its sha256 taken on the way."""

    def __init__(self, file: IO[bytes]) -> None:
        self.file = file
        self.sha256 = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.file.read(size)
        self.sha256.update(data)
        return data

    def write(self, data: bytes) -> int:
        self.sha256.update(data)
        return self.file.write(data)


class Entry:
    """One engine's dataset in the store."""

    def __init__(self, entry: Path, wanted: dict[str, Any]) -> None:
        self.entry = entry
        self.wanted = wanted

    @property
    def published(self) -> bool:
        # The entry's folder appears whole, by a rename, once its manifest is written.
        return (self.entry / MANIFEST).is_file()

    def fetch(self, snapshot: Path, marker: Path) -> bool:
        """The stored snapshot into an engine's work folder, its marker and the accounts'
        secrets into the vault that holds marker; False when there is none."""
        manifest_path = self.entry / MANIFEST
        if not manifest_path.is_file():
            return False
        manifest = json.loads(manifest_path.read_text())
        if {k: manifest.get(k) for k in self.wanted} != self.wanted:
            raise EngineError(
                f"{self.entry}: holds a snapshot of another dataset or binary than its name "
                "says; remove it to prepare the dataset again"
            )
        # Unpacked in a folder of root's own beside the work folder, then moved in whole:
        # the work folder is the server's uid's, and a link it planted where the unpacking
        # goes would have root unpack through it.
        work = snapshot.parent
        scratch = Path(tempfile.mkdtemp(prefix=f".{work.name}.snapshot.", dir=work.parent))
        try:
            with (self.entry / ARCHIVE).open("rb") as raw:
                hashing = _Hashing(raw)
                with tarfile.open(fileobj=hashing, mode="r|") as archive:  # type: ignore[call-overload]
                    untar.extract(archive, scratch, "data")
                while hashing.read(1 << 20):  # the tar's padding counts too
                    pass
            if hashing.sha256.hexdigest() != manifest["sha256"]:
                raise EngineError(
                    f"{self.entry / ARCHIVE}: sha256 differs from its manifest (damaged or "
                    "changed); remove the folder to prepare the dataset again"
                )
            shutil.rmtree(snapshot, ignore_errors=True)
            scratch.rename(snapshot)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        marker.parent.mkdir(mode=0o700, exist_ok=True)
        for name in SECRETS:
            write_secret(marker.parent / name, (self.entry / name).read_text())
        write_atomic(marker, json.dumps(manifest["marker"]))
        return True

    def publish(self, snapshot: Path, marker: Path) -> None:
        """This machine's fresh snapshot into the store, whole or not at all."""
        if (self.entry / MANIFEST).is_file():
            return
        partial = self.entry.with_name(self.entry.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        with (partial / ARCHIVE).open("wb") as raw:
            hashing = _Hashing(raw)
            with tarfile.open(fileobj=hashing, mode="w|") as archive:  # type: ignore[call-overload]
                for path in sorted(snapshot.iterdir()):
                    archive.add(path, arcname=path.name)
        for name in SECRETS:
            (partial / name).write_text(nofollow.read_text(marker.parent / name))
            (partial / name).chmod(0o600)
        manifest = {
            **self.wanted,
            "sha256": hashing.sha256.hexdigest(),
            "marker": json.loads(nofollow.read_text(marker)),
        }
        write_atomic(partial / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True))
        partial.rename(self.entry)


class SnapshotStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def entry(self, family: str, binary_sha256: str, dataset: str, snapshot_format: int) -> Entry:
        """The dataset of this binary: engines of other names on the same binary (a series
        of one build with different settings, say) share it."""
        wanted = {
            "binary_sha256": binary_sha256,
            "dataset": dataset,
            "format": snapshot_format,
        }
        digest = hashlib.sha256(json.dumps(wanted, sort_keys=True).encode()).hexdigest()[:16]
        return Entry(self.root / f"{family}-{digest}", wanted)

    @contextmanager
    def claim(self, entry: Entry) -> Iterator[Entry | None]:
        """The entry, locked for this machine to prepare and publish; None once it is
        published, by now or by the machine this one waited for (then fetched with no lock
        held, by every machine at once)."""
        if not entry.published:
            self.root.mkdir(parents=True, exist_ok=True)
            with entry.entry.with_name(entry.entry.name + ".lock").open("a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not entry.published:
                    yield entry
                    return
        yield None
