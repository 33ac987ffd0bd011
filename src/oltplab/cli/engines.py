"""`oltplab engines`: the catalog and the binary cache."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from oltplab.cli.app import console
from oltplab.cli.options import bound
from oltplab.engines.known import described, engines_named, listed_engines
from oltplab.engines.supplier import cached, supply


@dataclass(frozen=True)
class EnginesListOptions:
    spec: Annotated[Path | None, typer.Option(help="Also list the engines this spec defines.")] = (
        None
    )
    family: Annotated[
        str | None,
        typer.Option(
            help="Only this family's releases, in release order (a spec may name them as a "
            'series: engines = [{series = "mariadb >=10.4, <12"}]).'
        ),
    ] = None


@bound(EnginesListOptions)
def engines_list(given: EnginesListOptions) -> None:
    """The engines oltplab knows: name, family, version, source and whether they are fetched."""
    family = given.family
    table = Table(title="Engines" if family is None else f"{family} releases, oldest first")
    # A name is never cut, and a source folds onto more lines rather than end in "…": a
    # narrow terminal still shows what a spec would name.
    table.add_column("name", no_wrap=True)
    for column in ("family", "version"):
        table.add_column(column)
    table.add_column("source", overflow="fold")
    table.add_column("fetched")
    for e in listed_engines(given.spec, family):
        table.add_row(e.name, e.family, e.version, e.source, "yes" if e.fetched else "no")
    console.print(table)


@dataclass(frozen=True)
class EnginesFetchOptions:
    names: Annotated[
        list[str], typer.Argument(metavar="NAMES", help="Engine names from `oltplab engines list`.")
    ]
    spec: Annotated[
        Path | None, typer.Option(help="A spec whose own engines may be named too.")
    ] = None


@bound(EnginesFetchOptions)
def engines_fetch(given: EnginesFetchOptions) -> None:
    """Download, unpack and checksum engine binaries into the cache (~/.cache/oltplab)."""
    for engine in engines_named(given.names, given.spec):
        name = engine.name
        if cached(engine) is None:
            console.print(
                f"{name}: fetching {described(engine)} (download, unpack, checksum: a "
                "minute or so, once; later runs take it from the cache)",
                highlight=False, soft_wrap=True,
            )  # fmt: skip
        with console.status(f"fetching {name}"):
            distribution = supply(engine)
        lines = [
            f"{name}: {distribution.family} {distribution.version} at {distribution.basedir}",
            f"  sha256 {distribution.binary_sha256}  {distribution.server.name}",
        ]
        if distribution.archive_sha256:
            lines.append(f"  sha256 {distribution.archive_sha256}  (archive)")
        console.print("\n".join(lines), soft_wrap=True, highlight=False)
