"""Percona Server: MySQL's build by Percona. It runs, is configured and is spoken to as
MySQL is; only its name and its release number (`8.0.45-36`: the build counts) differ."""

from __future__ import annotations

from typing import ClassVar

from oltplab.engines.family import SelfDescription
from oltplab.engines.mysql import MysqlFamily


class PerconaFamily(MysqlFamily):
    name: ClassVar[str] = "percona-server"
    aliases: ClassVar[tuple[str, ...]] = ("percona", "percona-server", "ps")
    example = SelfDescription(
        " Ver 8.0.45-36 for Linux on x86_64 (Percona Server (GPL), Release 36, Revision 1)",
        "8.0.45-36 Percona Server (GPL), Release 36, Revision 1",
        "8.0.45-36",
    )

    @classmethod
    def claims(cls, said: str) -> bool:
        return "percona" in said

    @classmethod
    def release(cls, version: str) -> str:
        return version
