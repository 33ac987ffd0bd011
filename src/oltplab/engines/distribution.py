"""An engine's binaries on disk, and what they are: what the supplier hands the rest."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from oltplab.engines.cache import cache_entry
from oltplab.store.files import sha256_file

# One hash of MariaDB 10.11.5's mariadbd (282 MiB, unstripped) took 0.7 to 1.1 s on the
# project's 2 cores, MySQL 8.0.31's mysqld (60 MiB) 0.2 s: too much for every start of
# every cell, so a file is hashed again only when its inode, size, mtime or ctime say it
# may have changed. A write cannot hide from that (ctime cannot be set back), unless it
# lands in the same clock tick as the change before: a hash of a file changed less than
# RACY_NS before it is not kept.
_HASHED: dict[Path, tuple[tuple[int, ...], str]] = {}
RACY_NS = 2_000_000_000


@dataclass(frozen=True)
class Distribution:
    """An engine's binaries on disk, with what they are."""

    engine: str
    family: str
    version: str
    basedir: Path
    server: Path  # mysqld, mariadbd or postgres
    install_db: Path | None  # mariadb-install-db or initdb; MySQL initialises with mysqld
    messages_dir: Path | None
    binary_sha256: str
    source: dict[str, Any]
    archive_sha256: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            key: str(value) if isinstance(value, Path) else value
            for key, value in asdict(self).items()
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Distribution:
        paths = {"basedir", "server", "install_db", "messages_dir"}
        if "mysqld" in data:  # manifests written before PostgreSQL joined
            data = {**data, "server": data["mysqld"]}
            del data["mysqld"]
        fields: dict[str, Any] = {k: Path(v) if k in paths and v else v for k, v in data.items()}
        return cls(**fields)

    def moved_to(self, folder: Path) -> Distribution:
        """The paths recorded under a folder of this name, now under `folder`: a cache copied
        elsewhere (into an image, another OLTPLAB_CACHE) keeps its engines."""

        def moved(path: Path | None) -> Path | None:
            if path is None or folder.name not in path.parts:
                return path
            return folder.joinpath(*path.parts[path.parts.index(folder.name) + 1 :])

        return replace(
            self,
            basedir=moved(self.basedir) or self.basedir,
            server=moved(self.server) or self.server,
            install_db=moved(self.install_db),
            messages_dir=moved(self.messages_dir),
        )


def current_sha256(path: Path) -> str | None:
    """The file's sha256 as it is now; None when it cannot be read."""
    try:
        info = path.stat()
        stamp = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        known = _HASHED.get(path)
        if known is None or known[0] != stamp:
            known = (stamp, sha256_file(path))
            if time.time_ns() - info.st_ctime_ns > RACY_NS:
                _HASHED[path] = known
    except OSError:
        return None
    return known[1]


def altered_binary(distribution: Distribution, found: str | None, host: str | None) -> str | None:
    """Why the server binary must not run, in one line, when `found` (its sha256 now, on
    `host` or here) is not the one recorded for the engine; None when it is."""
    recorded = distribution.binary_sha256
    if found == recorded:
        return None
    entry = cache_entry(distribution.server)
    if host is not None:
        where, since = f" on host {host}", "as the engine's manifest records"
        fix = "run again, and oltplab copies the cache's there again"
    elif entry is not None:
        where, since = "", "as the cache's manifest recorded at its fetch"
        fix = f"remove {entry} so that the engine is fetched again"
    else:  # used where it is (a basedir, a Debian package): hashed when this run began
        where, since, fix = (
            "",
            "as when this run began",
            "run again to measure the binary now there",
        )
    said = "cannot be read" if found is None else f"has sha256 {found}"
    return (
        f"engine {distribution.engine}: its server binary {distribution.server}{where} {said}, "
        f"not {recorded} {since}; it was changed since, so it is not run: {fix}"
    )
