"""Every engine family passes the family contract (tests/family_contract.py): the four
built-in ones, and a test family that exists only here, added as a new family would be:
one class and one `register` line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

import pytest

from oltplab.engines.config import ServerPaths, Setting, plain
from oltplab.engines.control import Control
from oltplab.engines.families import family_named, register
from oltplab.engines.family import ControlRoute, Family, Layout
from oltplab.engines.hosts import Host
from oltplab.spec import ResolvedIntent
from tests.family_contract import Sample, check_family

BUILT_IN = {
    "mysql": Sample(
        " Ver 8.0.31 for Linux on x86_64 (MySQL Community Server - GPL)",
        "8.0.31 MySQL Community Server - GPL",
        "8.0.31",
    ),
    "percona-server": Sample(
        " Ver 8.0.45-36 for Linux on x86_64 (Percona Server (GPL), Release 36, Revision 1)",
        "8.0.45-36 Percona Server (GPL), Release 36, Revision 1",
        "8.0.45-36",
    ),
    "mariadb": Sample(
        " Ver 10.11.5-MariaDB for linux-systemd on x86_64 (MariaDB Server)",
        "10.11.5-MariaDB-log mariadb.org binary distribution",
        "10.11.5",
    ),
    "postgresql": Sample(
        "(PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)",
        "PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu",
        "15.18",
    ),
}


@pytest.mark.parametrize("name", sorted(BUILT_IN))
def test_every_built_in_family_passes_the_contract(name: str, tmp_path: Path) -> None:
    check_family(family_named(name), BUILT_IN[name], tmp_path)


class ToyFamily(Family):
    """A MySQL-protocol server with options of its own: what a new family adds."""

    name: ClassVar[str] = "toydb"
    client_protocol: ClassVar[str] = "mysql"
    aliases: ClassVar[tuple[str, ...]] = ("toydb",)
    cnf_name, log_name, pid_name = "toydb.conf", "toydb.log", "toydb.pid"

    @classmethod
    def claims(cls, said: str) -> bool:
        return "toydb" in said

    @classmethod
    def version_in(cls, banner: str) -> str | None:
        found = re.search(r"toydb (\d+(?:\.\d+)+)", banner, re.IGNORECASE)
        return found.group(1) if found else None

    @classmethod
    def tunables(cls, version: tuple[int, ...], intent: ResolvedIntent) -> list[Setting]:
        return [
            plain("cache_bytes", intent.buffer_pool),
            plain("sync_commits", intent.flush_log_at_trx_commit == 1),
            *(plain(k, v) for k, v in intent.extra.get(cls.name, {}).items()),
        ]

    @classmethod
    def server_settings(cls, version: tuple[int, ...], paths: ServerPaths) -> list[Setting]:
        return [Setting("listen", f"127.0.0.1:{paths.port}", None, None)]

    @classmethod
    def option_file(
        cls, engine: str, tier: str, server: list[Setting], tunables: list[Setting]
    ) -> str:
        return "".join(f"{s.option}={s.value}\n" for s in [*server, *tunables])

    def initialise_command(self, layout: Layout, machine: Host) -> list[str]:
        return [str(self.distribution.server), "--initialise", str(layout.datadir)]

    def server_command(self, layout: Layout, machine: Host, options: list[str]) -> list[str]:
        return [str(self.distribution.server), f"--config={layout.cnf}", *options]

    def control(self, route: ControlRoute, password: str) -> Control:
        return Control(port=route.port, password=password)

    @classmethod
    def client(cls, host: str, port: int, user: str, password: str) -> Control:
        return Control(host=host, port=port, user=user, password=password)


register(ToyFamily)


def test_a_new_family_is_one_class_and_one_registration(tmp_path: Path) -> None:
    check_family(
        ToyFamily,
        Sample(" toydb 2.1.0 (a test family)", "2.1.0 ToyDB server", "2.1.0"),
        tmp_path,
    )
