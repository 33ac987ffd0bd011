"""An engine's binaries on disk, and what they are: what the supplier hands the rest."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any


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
