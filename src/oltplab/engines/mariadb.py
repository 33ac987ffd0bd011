"""MariaDB: mariadbd (mysqld before 10.5) with a my.cnf, initialised by
mariadb-install-db, spoken to over the MySQL protocol. What differs from MySQL: its
redo log and buffer pool options since 10.5, a query cache until 12.1, no X plugin, the
install script and its accounts."""

from __future__ import annotations

from typing import ClassVar

from oltplab.base.errors import EngineError
from oltplab.engines.config import Setting, parse_version, plain
from oltplab.engines.control import quote
from oltplab.engines.family import Layout, SelfDescription
from oltplab.engines.hosts import Host
from oltplab.engines.mysql import MysqlFamily


class MariadbFamily(MysqlFamily):
    name: ClassVar[str] = "mariadb"
    aliases: ClassVar[tuple[str, ...]] = ("mariadb",)
    example = SelfDescription(
        " Ver 10.11.5-MariaDB for linux-systemd on x86_64 (MariaDB Server)",
        "10.11.5-MariaDB-log mariadb.org binary distribution",
        "10.11.5",
    )
    # mariadbd since 10.5: bin/mysqld first in a tarball (there a link to it), but Debian's
    # /usr/sbin/mariadbd before its mysqld link.
    server_binaries: ClassVar[tuple[str, ...]] = (
        "bin/mysqld", "bin/mariadbd", "sbin/mariadbd", "sbin/mysqld",
    )  # fmt: skip
    install_scripts: ClassVar[tuple[str, ...]] = (
        "scripts/mariadb-install-db",
        "bin/mariadb-install-db",
        "scripts/mysql_install_db",
        "bin/mysql_install_db",  # 10.1's binary tarballs
    )
    messages_folders: ClassVar[tuple[str, ...]] = ("share", "share/mysql", "share/mariadb")

    @classmethod
    def claims(cls, said: str) -> bool:
        return "mariadb" in said

    @classmethod
    def fixed_settings(cls, version: tuple[int, ...]) -> list[Setting]:
        # Snapshot isolation came in 10.6.18, 10.11.8 and 11.4.2 (off) and is on by default
        # since 11.6.2, where sysbench's read-write then meets error 1020 and skips the
        # transaction. Off wherever it exists: every release runs the same transactions
        # ([config.extra.mariadb] innodb_snapshot_isolation = "ON" to compare).
        if cls.has_snapshot_isolation(version):
            return [plain("innodb_snapshot_isolation", False)]
        return []

    @classmethod
    def has_snapshot_isolation(cls, version: tuple[int, ...]) -> bool:
        since: dict[tuple[int, ...], tuple[int, ...]] = {
            (10, 6): (10, 6, 18),
            (10, 11): (10, 11, 8),
            (11, 0): (11, 0, 6),
            (11, 1): (11, 1, 5),
            (11, 2): (11, 2, 4),
            (11, 4): (11, 4, 2),
            (11, 5): (11, 5, 1),
        }
        return version >= since.get(version[:2], (11, 6))

    @classmethod
    def has_buffer_pool_instances(cls, version: tuple[int, ...]) -> bool:
        return version < (10, 5)  # one buffer pool instance since 10.5

    @classmethod
    def has_query_cache(cls, version: tuple[int, ...]) -> bool:
        return version < (12, 1)

    @classmethod
    def has_x_plugin(cls, version: tuple[int, ...]) -> bool:
        return False

    @classmethod
    def redo_settings(cls, version: tuple[int, ...], capacity: int) -> list[Setting]:
        if version >= (10, 5):
            # One log file since 10.5; innodb_log_files_in_group is ignored, then removed in 10.6.
            return [plain("innodb_log_file_size", capacity)]
        return [
            plain("innodb_log_file_size", capacity // 2),
            plain("innodb_log_files_in_group", 2),
        ]

    @classmethod
    def password_clause(cls, version: tuple[int, ...]) -> str:
        return "IDENTIFIED BY"

    @classmethod
    def set_root_password(cls, version: tuple[int, ...], password: str) -> str:
        if version < (10, 2):
            return f"SET PASSWORD FOR 'root'@'localhost' = PASSWORD({quote(password)});"
        return super().set_root_password(version, password)

    @property
    def makes_its_datadir(self) -> bool:
        return True

    def initialise_command(self, layout: Layout, machine: Host) -> list[str]:
        """mariadb-install-db makes the datadir itself and leaves root without a password;
        the first start gives it one (accounts_sql)."""
        dist = self.distribution
        if dist.install_db is None:
            raise EngineError(f"engine {dist.engine}: no mariadb-install-db script found")
        version = parse_version(dist.version)
        # Before 10.4 root logs in with a password anyway, and before 10.3 the script has
        # no way to leave out the test database (then an empty one is left behind).
        options = ["--auth-root-authentication-method=normal"] if version >= (10, 4) else []
        options += ["--skip-test-db"] if version >= (10, 3) else []
        # 10.1's script stops where it cannot resolve the host name (some builds leave out
        # resolveip); --force goes on, naming hosts by address, which nothing here needs.
        options += ["--force"] if version < (10, 2) else []
        cnf = f"--defaults-file={layout.cnf}"
        return machine.as_server(
            [str(dist.install_db), cnf, f"--basedir={dist.basedir}", *options],
            self.server_view(layout),
        )
