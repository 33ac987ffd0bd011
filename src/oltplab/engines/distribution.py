"""An engine's binaries on disk, and what they are: what the supplier hands the rest."""

from __future__ import annotations

from dataclasses import asdict, dataclass
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
