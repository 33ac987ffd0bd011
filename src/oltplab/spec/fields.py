"""The spec's field types and the checks that keep a spec from opening a door: names,
ranges, printable text, engine options and SSH options."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    Strict,
    WithJsonSchema,
)
from pydantic_core import PydanticCustomError

from oltplab.base.sizes import format_size, parse_size
from oltplab.spec.catalog import FAMILIES
from oltplab.spec.server_options import safe_extras

Scalar = str | int | float | bool


def _known_family(name: str) -> str:
    if name not in FAMILIES:
        known = ", ".join(FAMILIES) or "none is registered (import oltplab.engines.families)"
        raise ValueError(f"expected a family: {known}")
    return name


Family = Annotated[str, AfterValidator(_known_family)]

# The workload kinds a spec may name (workloads/kinds.py registers them; a plugin's kind is
# added when the command line imports it). sbtest, sysbench's own tables, is the default
# and always known, so that a spec parses before anything is registered.
DEFAULT_KIND = "sbtest"
KINDS: list[str] = [DEFAULT_KIND]


def _known_kind(name: str) -> str:
    if name not in KINDS:
        raise ValueError(f"expected a workload kind: {', '.join(KINDS)}")
    return name


Kind = Annotated[str, AfterValidator(_known_kind)]

# The orders a spec's protocol may name: the built-in ones, which measure/ordering.py
# implements, and a plugin's, which its registration there adds.
BUILT_IN_ORDERS = ("as-listed", "interleaved", "alternating", "sliced", "random")
ORDER_NAMES: list[str] = list(BUILT_IN_ORDERS)


def _known_order(name: str) -> str:
    if name not in ORDER_NAMES:
        # Worded as pydantic words a choice of literals, which the built-in ones were.
        quoted = [f"'{known}'" for known in ORDER_NAMES]
        expected = f"{', '.join(quoted[:-1])} or {quoted[-1]}"
        raise PydanticCustomError(
            "literal_error", "Input should be {expected}", {"expected": expected}
        )
    return name


OrderName = Annotated[
    str,
    AfterValidator(_known_order),
    WithJsonSchema({"type": "string", "enum": list(BUILT_IN_ORDERS)}),
]

ByteSize = Annotated[
    int,
    BeforeValidator(parse_size, json_schema_input_type=int | str),
    PlainSerializer(format_size, return_type=str),
]
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
Name = Annotated[str, Field(pattern=NAME_PATTERN, max_length=64)]
WEEK_SECONDS = 7 * 24 * 3600
MAX_THREADS = 10_000


def whole(low: int, high: int, unit: str = "") -> BeforeValidator:
    """An integer key within [low, high]: floats, strings and booleans are refused, so
    `measure_seconds = 1e9` or `table_size = true` never slip through as numbers."""

    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"expected a whole number{unit} from {low:,} to {high:,}")
        return value

    return BeforeValidator(check, json_schema_input_type=int)


Seconds = Annotated[int, whole(1, WEEK_SECONDS, " of seconds")]
OptionalSeconds = Annotated[int, whole(0, WEEK_SECONDS, " of seconds (0 skips it)")]
ThreadCount = Annotated[int, whole(1, MAX_THREADS, " of threads")]
# Open loop: transactions a second offered, all threads together.
Rate = Annotated[int, whole(1, 100_000_000, " of transactions a second")]


def _distinct_rates(rates: list[int]) -> list[int]:
    # The same rate twice would be the same cells twice, under one name.
    if repeated := sorted({rate for rate in rates if rates.count(rate) > 1}):
        raise ValueError(f"each rate may be given once ({repeated[0]} is given more than once)")
    return rates


Rates = Annotated[list[Rate], Field(max_length=1000), AfterValidator(_distinct_rates)]
Count = Annotated[int, whole(1, 10**9)]
NonNegativeCount = Annotated[int, whole(0, 2**32 - 1)]


def printable(value: str) -> str:
    """Free text that ends up in option files, command lines or logs may hold no line
    breaks or other control characters (a newline would add lines to a file)."""
    if any(ord(char) < 32 or ord(char) == 127 for char in value):
        raise ValueError(f"must be one line without control characters (got {value!r})")
    return value


Text = Annotated[str, AfterValidator(printable)]

SYSBENCH_TESTS = (
    "oltp_read_write",
    "oltp_read_only",
    "oltp_write_only",
    "oltp_point_select",
    "oltp_update_index",
    "oltp_update_non_index",
    "oltp_insert",
    "oltp_delete",
    "select_random_points",
    "select_random_ranges",
)
READ_ONLY_TESTS = frozenset(
    {"oltp_read_only", "oltp_point_select", "select_random_points", "select_random_ranges"}
)
# sysbench options a workload may not give (from sysbench 1.0.20's `sysbench --help`).
# sysbench reads --table_size as --table-size, so names are compared in the hyphen spelling.
# The runner's own, and their deprecated aliases: letting a workload override them would
# break the protocol (and run.json would record the runner's value, not the one run).
RUNNER_SYSBENCH_OPTIONS = frozenset(
    {
        "threads", "num-threads", "time", "max-time", "events", "max-requests", "rate",
        "tx-rate", "tables", "table-size", "report-interval", "percentile", "histogram",
        "config-file", "db-driver",
        *(
            f"{driver}-{what}"
            for driver in ("mysql", "pgsql")
            for what in ("host", "port", "user", "password", "db", "socket")
        ),
    }
)  # fmt: skip
# Those that change what a cell is without the spec or its results saying so: a forced
# shutdown, counters reset at checkpoints, validation, debug, help or no output instead of
# the report, errors ignored, a dry run that sends no query, the MySQL driver's SSL (which
# reads its keys from files in the working folder) and LuaJIT commands (in sysbench builds
# with their own LuaJIT).
UNRECORDED_SYSBENCH_OPTIONS = frozenset(
    {
        "forced-shutdown", "report-checkpoints", "validate", "verbosity", "debug", "help",
        "version", "luajit-cmd", "db-debug", "mysql-debug", "mysql-dry-run",
        "mysql-ignore-errors", "mysql-ssl", "mysql-ssl-cipher",
    }
)  # fmt: skip
RESERVED_SYSBENCH_OPTIONS = RUNNER_SYSBENCH_OPTIONS | UNRECORDED_SYSBENCH_OPTIONS


ExtraOptions = Annotated[dict[str, Scalar], AfterValidator(safe_extras)]

# `ssh -o` options a spec may give: how to reach and trust the host, nothing that runs a
# command (ProxyCommand, LocalCommand, KnownHostsCommand), loads code (PKCS11Provider) or
# opens a forward. Anything else belongs in the user's own ~/.ssh/config.
SSH_OPTIONS = {
    name.lower(): name
    for name in (
        "Port", "User", "HostName", "HostKeyAlias", "IdentityFile", "IdentitiesOnly",
        "StrictHostKeyChecking", "UserKnownHostsFile", "GlobalKnownHostsFile",
        "CheckHostIP", "HashKnownHosts", "UpdateHostKeys", "ConnectTimeout",
        "ConnectionAttempts", "ServerAliveInterval", "ServerAliveCountMax", "TCPKeepAlive",
        "Compression", "AddressFamily", "LogLevel", "Ciphers", "MACs", "KexAlgorithms",
        "HostKeyAlgorithms", "PubkeyAcceptedAlgorithms", "PubkeyAcceptedKeyTypes",
        "PreferredAuthentications", "PubkeyAuthentication", "PasswordAuthentication",
        "GSSAPIAuthentication", "IPQoS", "RekeyLimit",
    )
}  # fmt: skip


def allowed_ssh_options(options: dict[str, str]) -> dict[str, str]:
    for key, value in options.items():
        if key.lower() not in SSH_OPTIONS:
            raise ValueError(
                f"ssh option {key} is not allowed (a spec may set only "
                f"{', '.join(sorted(SSH_OPTIONS.values()))}); put it in your own ~/.ssh/config"
            )
        printable(value)
    return options


# A path is written as a string: the one type strict validation must let convert.
PathText = Annotated[Path, Strict(False)]


class StrictModel(BaseModel):
    # Strict: a quoted number ("2") or true is not a number, nor 80.0 a whole one, and no
    # number is inf or nan; a key that takes one says so in the error, whatever its type.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)
