"""Translate one configuration intent into each family's and version's option file.

The same intent means different option names across MySQL 5.7, 8.0 before and after
8.0.30, 8.4+, Percona Server and MariaDB; options removed in a version are never written.
Every setting carries the value `SHOW GLOBAL VARIABLES` must show once the server runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from oltplab.base.sizes import parse_size
from oltplab.spec import ResolvedIntent
from oltplab.spec.fields import Scalar

GIB = 1024**3


@dataclass(frozen=True)
class Setting:
    option: str
    value: Scalar | None  # None: a flag written without "= value"
    variable: str | None  # the server variable that proves it took effect, if there is one
    expected: str | None

    def line(self) -> str:
        if self.value is None:
            return self.option
        if isinstance(self.value, bool):
            return f"{self.option} = {'ON' if self.value else 'OFF'}"
        return f"{self.option} = {self.value}"


@dataclass(frozen=True)
class ServerPaths:
    basedir: Path
    datadir: Path
    socket: Path
    port: int
    pid_file: Path
    error_log: Path
    tmpdir: Path
    secure_files: Path
    lc_messages_dir: Path | None
    bind_address: str = "127.0.0.1"


@dataclass(frozen=True)
class Mismatch:
    variable: str
    intended: str
    actual: str | None


def parse_version(version: str) -> tuple[int, ...]:
    """(8, 0, 31) from "8.0.31", "8.0.36-28" or "10.11.5-MariaDB-log"."""
    match = re.match(r"^\s*(\d+(?:\.\d+)*)", version)
    if not match:
        raise ValueError(f"not a version number: {version!r}")
    return tuple(int(part) for part in match.group(1).split("."))


def canonical(value: Scalar | None) -> str:
    """A setting's value the way SHOW GLOBAL VARIABLES prints it."""
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    return str(value)


def _plain(option: str, value: Scalar) -> Setting:
    return Setting(option, value, option, canonical(value))


def has_query_cache(family: str, version: tuple[int, ...]) -> bool:
    if family == "mariadb":
        return version < (12, 1)
    return version < (8, 0)


def has_x_plugin(family: str, version: tuple[int, ...]) -> bool:
    return family != "mariadb" and version >= (8, 0)


def redo_settings(family: str, version: tuple[int, ...], capacity: int) -> list[Setting]:
    """The same total redo capacity, spelled the way each version sizes its redo log."""
    if family == "mariadb":
        if version >= (10, 5):
            # One log file since 10.5; innodb_log_files_in_group is ignored, then removed in 10.6.
            return [_plain("innodb_log_file_size", capacity)]
    elif version >= (8, 0, 30):
        return [_plain("innodb_redo_log_capacity", capacity)]
    return [
        _plain("innodb_log_file_size", capacity // 2),
        _plain("innodb_log_files_in_group", 2),
    ]


# max_wal_size must hold at least two 16 MB WAL segments.
MIN_WAL_SIZE = 32 * 1024**2


def _postgres(option: str, value: Scalar, expected: Scalar) -> Setting:
    return Setting(option, value, option, canonical(expected))


def postgres_settings(intent: ResolvedIntent) -> list[Setting]:
    """The intent in postgresql.conf's terms: the buffer pool is shared_buffers, the redo
    capacity max_wal_size, durability synchronous_commit, the doublewrite buffer's job
    (torn pages) full_page_writes, the binary log's (a log others can replay) wal_level.

    Sizes are written in kB and MB and expected back in bytes: oltplab reads pg_settings
    with its units applied. InnoDB's io_capacity, sync_binlog and binlog_format have no
    counterpart and are not written; the report shows each engine's own settings.
    """
    wal = max(MIN_WAL_SIZE, intent.redo_capacity)
    settings = [
        _postgres("shared_buffers", f"{intent.buffer_pool // 1024}kB", intent.buffer_pool),
        _postgres("max_wal_size", f"{wal // 1024**2}MB", wal // 1024**2 * 1024**2),
        # 0 and 2 both give up durability of the last commits for speed, as async commit does;
        # fsync stays on in every tier so a crash never corrupts the datadir.
        _postgres(
            "synchronous_commit",
            intent.flush_log_at_trx_commit == 1,
            intent.flush_log_at_trx_commit == 1,
        ),
        _postgres("full_page_writes", intent.doublewrite, intent.doublewrite),
        _postgres("max_connections", intent.max_connections, intent.max_connections),
    ]
    if intent.binlog:
        settings.append(_postgres("wal_level", "replica", "replica"))
    else:
        # wal_level minimal refuses to start while WAL senders are allowed.
        settings += [
            _postgres("wal_level", "minimal", "minimal"),
            _postgres("max_wal_senders", 0, 0),
        ]
    settings += [
        _plain(option, value) for option, value in intent.extra.get("postgresql", {}).items()
    ]
    return settings


def intent_settings(family: str, version: str, intent: ResolvedIntent) -> list[Setting]:
    if family == "postgresql":
        return postgres_settings(intent)
    parsed = parse_version(version)
    settings = [_plain("innodb_buffer_pool_size", intent.buffer_pool)]
    if family != "mariadb" or parsed < (10, 5):
        instances = 8 if intent.buffer_pool >= 8 * GIB else 1
        settings.append(_plain("innodb_buffer_pool_instances", instances))
    settings += redo_settings(family, parsed, intent.redo_capacity)
    settings.append(_plain("innodb_flush_log_at_trx_commit", intent.flush_log_at_trx_commit))
    if intent.binlog:
        settings += [
            Setting("log_bin", "binlog", "log_bin", "ON"),
            _plain("server_id", 1),
            _plain("sync_binlog", intent.sync_binlog),
            _plain("binlog_format", intent.binlog_format),
        ]
    else:
        settings.append(Setting("skip_log_bin", None, "log_bin", "OFF"))
    settings += [
        _plain("innodb_doublewrite", intent.doublewrite),
        _plain("innodb_io_capacity", intent.io_capacity),
        _plain("innodb_io_capacity_max", intent.io_capacity_max),
        _plain("max_connections", intent.max_connections),
        _plain("character_set_server", intent.charset),
    ]
    if intent.flush_method:
        settings.append(_plain("innodb_flush_method", intent.flush_method))
    if has_query_cache(family, parsed):
        settings += [
            Setting("query_cache_type", 0, "query_cache_type", "OFF"),
            _plain("query_cache_size", 0),
        ]
    # A buffer pool dumped at the prepare shutdown would warm every tier from the snapshot.
    settings += [
        _plain("innodb_buffer_pool_dump_at_shutdown", False),
        _plain("innodb_buffer_pool_load_at_startup", False),
        # sysbench prepares statements per thread and table; the default runs out at high counts.
        _plain("max_prepared_stmt_count", 1_000_000),
    ]
    for option, value in intent.extra.get(family, {}).items():
        settings.append(_plain(option.replace("-", "_"), value))
    return settings


def extra_settings(extra: dict[str, Scalar]) -> list[Setting]:
    return [_plain(option.replace("-", "_"), value) for option, value in extra.items()]


def server_settings(family: str, version: str, paths: ServerPaths) -> list[Setting]:
    """Where the private instance lives; never verified because they are not tunables."""
    lines: list[tuple[str, Scalar | None]] = [
        ("basedir", str(paths.basedir)),
        ("datadir", str(paths.datadir)),
        ("port", paths.port),
        ("socket", str(paths.socket)),
        ("pid_file", str(paths.pid_file)),
        ("log_error", str(paths.error_log)),
        ("tmpdir", str(paths.tmpdir)),
        ("bind_address", paths.bind_address),
        ("skip_name_resolve", None),
        # SELECT ... INTO OUTFILE and LOAD DATA INFILE reach this empty folder only.
        ("secure_file_priv", str(paths.secure_files)),
    ]
    if paths.lc_messages_dir:
        lines.append(("lc_messages_dir", str(paths.lc_messages_dir)))
    if has_x_plugin(family, parse_version(version)):
        lines.append(("mysqlx", "OFF"))
    return [Setting(option, value, None, None) for option, value in lines]


def postgres_server_settings(paths: ServerPaths) -> list[Setting]:
    """Where the private PostgreSQL instance listens; never verified (not tunables)."""
    lines: list[tuple[str, Scalar]] = [
        ("port", paths.port),
        ("listen_addresses", paths.bind_address),
        ("unix_socket_directories", str(paths.socket)),
        ("logging_collector", False),  # the log goes to the server's stderr: our log file
        ("external_pid_file", str(paths.pid_file)),  # how a stale server is found again
    ]
    return [Setting(option, value, None, None) for option, value in lines]


def render_postgresql_conf(
    engine: str, tier: str, server: list[Setting], tunables: list[Setting]
) -> str:
    """postgresql.conf; later lines win, so engine extras can override the intent."""

    def line(setting: Setting) -> str:
        value = setting.value
        if isinstance(value, str):
            value = "'" + value.replace("'", "''") + "'"
        elif isinstance(value, bool):
            value = "on" if value else "off"
        return f"{setting.option} = {value}"

    out = [
        f"# Generated by oltplab for engine {engine}, tier {tier}.",
        *(line(setting) for setting in server),
        "",
        "# intent, translated for PostgreSQL",
        *(line(setting) for setting in tunables),
        "",
    ]
    return "\n".join(out)


def option_file(
    family: str, version: str, engine: str, tier: str, paths: ServerPaths, tunables: list[Setting]
) -> str:
    """The whole option file for a private instance of this family: my.cnf or
    postgresql.conf."""
    if family == "postgresql":
        return render_postgresql_conf(engine, tier, postgres_server_settings(paths), tunables)
    return render_cnf(engine, tier, server_settings(family, version, paths), tunables)


def render_cnf(engine: str, tier: str, server: list[Setting], tunables: list[Setting]) -> str:
    """The option file; later lines win, so engine extras can override the intent."""
    out = [
        f"# Generated by oltplab for engine {engine}, tier {tier}.",
        "[mysqld]",
        *(setting.line() for setting in server),
        "",
        "# intent, translated for this family and version",
        *(setting.line() for setting in tunables),
        "",
    ]
    return "\n".join(out)


def expected_variables(tunables: list[Setting]) -> dict[str, str]:
    expected: dict[str, str] = {}
    for setting in tunables:
        if setting.variable and setting.expected is not None:
            expected[setting.variable] = setting.expected
    return expected


_TRUE = {"ON", "1", "TRUE", "YES"}
_FALSE = {"OFF", "0", "FALSE", "NO"}


def same_value(intended: str, actual: str) -> bool:
    a, b = intended.strip().upper(), actual.strip().upper()
    if a == b:
        return True
    for group in (_TRUE, _FALSE):
        if a in group and b in group:
            return True
    try:
        return float(a) == float(b)
    except ValueError:
        pass
    try:  # an extra written as "64M" shows as 67108864
        return parse_size(a) == parse_size(b)
    except ValueError:
        return False


def check_variables(expected: dict[str, str], actual: dict[str, str]) -> list[Mismatch]:
    """Every intended setting that the live server does not show; unknown variables count too."""
    lowered = {name.lower(): value for name, value in actual.items()}
    mismatches = []
    for variable, intended in expected.items():
        live = lowered.get(variable.lower())
        if live is None or not same_value(intended, live):
            mismatches.append(Mismatch(variable, intended, live))
    return mismatches


def describe_mismatch(mismatch: Mismatch) -> str:
    actual = "not a server variable" if mismatch.actual is None else f"actual {mismatch.actual}"
    hint = ""
    if mismatch.variable == "innodb_buffer_pool_size":
        hint = (
            " (InnoDB rounds the buffer pool to a multiple of "
            "innodb_buffer_pool_chunk_size x instances; pick such a size)"
        )
    return f"{mismatch.variable} intended {mismatch.intended}, {actual}{hint}"
