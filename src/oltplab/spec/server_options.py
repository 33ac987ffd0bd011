"""Raw server options a spec may add (`[config.extra.<family>]`, a tier's `extra`, an
engine's `extra`): the check that keeps them from opening a door, and the list of them that
`oltplab rerun` and the report show.

A spec can come from someone else (`oltplab rerun` of a run.json), so options that name
files or folders, load code, run commands, open access or weaken accounts are refused: with
them a spec could write files as the server's user or let anyone log in. A name is judged
as the server reads it, not as written: PostgreSQL ignores case; MySQL and MariaDB
(my_getopt) take `-` for `_`, read `loose-X`, `enable-X` and `maximum-X` as X and `skip-X`
and `disable-X` as X switched off, the prefixes in any number and order; and MariaDB (10.11
here, `--getopt-prefix-matching` on by default) takes an unambiguous abbreviation of a
name, `bind-addr` for `bind-address` (MySQL 8.0 no longer does).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

# my_getopt's option prefixes; it strips them again after each (`loose-skip-X`).
GETOPT_PREFIXES = ("loose_", "enable_", "disable_", "skip_", "maximum_")

# The refused names, as the server reads them (no getopt prefix: `skip-grant-tables` is
# grant_tables switched off, so any spelling of grant_tables is refused).
_UNSAFE_SUFFIXES = (
    "_file", "_filename", "dir", "_dirs", "_directory", "_directories", "_path", "_command",
    "_cmd", "_library", "_libraries", "_keyfile", "_provider",
)  # fmt: skip
_UNSAFE_PREFIXES = (
    # code loaded, commands or SQL run at start
    "plugin", "early_plugin", "init", "include", "archive_", "restore_", "recovery_",
    "wsrep", "debug",
    # access: TLS material, listeners, accounts and their checks
    "ssl", "tls", "admin_", "mysqlx", "unix_socket", "grant", "secure", "utility_user",
    "getopt",  # MariaDB's abbreviations switched back on
    # files the server writes where it is told
    "log_bin", "relay_log",
    "feedback",  # MariaDB's reports sent to a URL
)  # fmt: skip
_UNSAFE_NAMES = frozenset(
    {
        # where it listens, and who may reach it
        "port", "socket", "bind_address", "networking", "named_pipe", "shared_memory",
        "shared_memory_base_name", "listen_addresses", "extra_port", "proxy_protocol_networks",
        # the server's user, files and folders
        "user", "chroot", "log", "log_error", "log_tc", "log_basename", "log_isam", "language",
        "local_infile", "bootstrap",
        # weaker accounts, or code let in
        "old_passwords", "password_encryption", "allow_suspicious_udfs",
        "shared_preload_libraries", "local_preload_libraries", "session_preload_libraries",
    }
)  # fmt: skip
# Options that the suffix rules refuse, named for the abbreviation check (a prefix rule
# refuses its abbreviations by itself): MariaDB 10.11's, from `mariadbd --help --verbose`,
# and MySQL 8.0's.
_SUFFIX_REFUSED = (
    "aria_log_dir_path", "aria_sync_log_dir", "basedir", "character_sets_dir", "core_file",
    "datadir", "des_key_file", "ft_stopword_file", "general_log_file", "ignore_db_dirs",
    "innodb_buffer_pool_filename", "innodb_data_file_path", "innodb_data_home_dir",
    "innodb_directories", "innodb_log_group_home_dir", "innodb_redo_log_archive_dirs",
    "innodb_status_file", "innodb_temp_data_file_path", "innodb_temp_tablespaces_dir",
    "innodb_tmpdir", "innodb_undo_directory", "lc_messages_dir", "log_slow_query_file",
    "master_info_file", "pid_file", "replica_load_tmpdir", "slave_load_tmpdir",
    "slow_query_log_file", "tmpdir", "version_malloc_library", "version_ssl_library",
)  # fmt: skip
# Options of their own that begin a refused name: the server takes an exact name as it is.
_EXACT_OPTIONS = frozenset(
    {"general_log", "slow_query_log", "log_slow_query", "innodb", "old", "version", "lc_messages",
     "jit"}
)  # fmt: skip
# The longest option either family has is under 50 characters; values such as
# optimizer_switch run to a few hundred.
MAX_NAME_CHARS = 64
_OPTION_NAME = re.compile(rf"^[A-Za-z][A-Za-z0-9_.-]{{0,{MAX_NAME_CHARS - 1}}}$")
MAX_VALUE_CHARS = 4096


def read_as(key: str) -> str:
    """The option a server reads under this name: lower case, `_` for `-`, without
    my_getopt's prefixes."""
    name = key.lower().replace("-", "_")
    while prefix := next((p for p in GETOPT_PREFIXES if name.startswith(p)), None):
        name = name.removeprefix(prefix)
    return name


def _refused(name: str) -> bool:
    return (
        name in _UNSAFE_NAMES
        or name.endswith(_UNSAFE_SUFFIXES)
        or name.startswith(_UNSAFE_PREFIXES)
    )


_ABBREVIATED = sorted(
    {*_UNSAFE_NAMES, *_SUFFIX_REFUSED, *(f"{p.rstrip('_')}..." for p in _UNSAFE_PREFIXES)}
)


def refused_as(key: str) -> str | None:
    """The refused option a server reads this name as (itself, without its prefixes, or
    the one it abbreviates), or None when the name is allowed."""
    name = read_as(key)
    if _refused(name):
        return name
    if name in _EXACT_OPTIONS:
        return None
    return next((whole for whole in _ABBREVIATED if whole.startswith(name)), None)


def safe_extras(options: dict[str, Any]) -> dict[str, Any]:
    for key, value in options.items():
        if not _OPTION_NAME.match(key):
            # Cut: the spec's error line echoes the key too (spec/messages cuts it there).
            shown = repr(key[:MAX_NAME_CHARS]) + ("..." if len(key) > MAX_NAME_CHARS else "")
            raise ValueError(
                f"{shown} is not an option name (at most {MAX_NAME_CHARS} letters, digits, _ - .)"
            )
        if (refused := refused_as(key)) is not None:
            spelled = key.lower().replace("-", "_")
            raise ValueError(
                f"{key}: oltplab does not pass options that name files or folders, load code, "
                "run commands, open access or weaken accounts"
                + (f" (the server reads it as {refused})" if refused != spelled else "")
                + "; the instance's paths and accounts are its own"
            )
        if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
            raise ValueError(f"{key}: a value of at most {MAX_VALUE_CHARS:,} characters")
        if isinstance(value, str) and (
            "[" in value or any(ord(char) < 32 or ord(char) == 127 for char in value)
        ):
            raise ValueError(
                f"{key}: the value must be one line without '[' or control characters "
                f"(got {value!r})"
            )
    return options


def extra_option_lines(spec: Mapping[str, Any]) -> list[str]:
    """Every raw server option a spec (as read from TOML, or a Spec's model_dump) passes,
    one line per place it gives them: what the engines ran with beyond oltplab's own
    settings. Tolerates a spec of any shape, so that a report shows what a stored spec said
    even where this version would refuse it."""
    places: list[tuple[str, Any]] = []
    config = spec.get("config")
    if isinstance(config, Mapping) and isinstance(config.get("extra"), Mapping):
        places += [(f"config.extra.{f}", o) for f, o in config["extra"].items()]
    tiers = spec.get("tiers")
    for index, tier in enumerate(tiers if isinstance(tiers, list) else []):
        if isinstance(tier, Mapping) and isinstance(tier.get("extra"), Mapping):
            name = tier.get("name", index)
            places += [(f"tier {name} extra.{f}", o) for f, o in tier["extra"].items()]
    engines = spec.get("engines")
    for index, engine in enumerate(engines if isinstance(engines, list) else []):
        if isinstance(engine, Mapping) and "extra" in engine:
            name = engine.get("name") or engine.get("series") or index
            places.append((f"engine {name} extra", engine["extra"]))
    return [
        f"{where}: " + ", ".join(f"{key} = {json.dumps(value)}" for key, value in options.items())
        for where, options in places
        if isinstance(options, Mapping) and options
    ]
