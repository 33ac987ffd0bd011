"""Settings and how they are checked live: what every family's translation of the intent
is made of (each family's own translation is in its module, engines/mysql.py ...), and
the comparison of what a running server shows with what was intended.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from oltplab.base.errors import EngineError
from oltplab.base.sizes import parse_size
from oltplab.spec.fields import Scalar


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


def client_section(options: dict[str, str]) -> str:
    """A [client] section of a MySQL option file, each value quoted and escaped the way the
    client reads it back. A value with a control character is refused: a line break would
    start an option of its own (plugin-dir and default-auth make root's client load code)."""
    lines = ["[client]"]
    for key, value in options.items():
        if any(ord(char) < 32 or ord(char) == 127 for char in value):
            what = "password" if key == "password" else f"{key} {value!r}"
            raise EngineError(
                f"the client's {what} holds a line break or another control character, "
                "which an option file cannot carry; choose one without"
            )
        quoted = value.replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f'{key}="{quoted}"')
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class VariableMismatch:
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


def plain(option: str, value: Scalar) -> Setting:
    """A setting whose server variable has its option's name and value."""
    return Setting(option, value, option, canonical(value))


def extra_settings(extra: dict[str, Scalar]) -> list[Setting]:
    return [plain(option.replace("-", "_"), value) for option, value in extra.items()]


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


def check_variables(expected: dict[str, str], actual: dict[str, str]) -> list[VariableMismatch]:
    """Every intended setting that the live server does not show; unknown variables count too."""
    lowered = {name.lower(): value for name, value in actual.items()}
    mismatches = []
    for variable, intended in expected.items():
        live = lowered.get(variable.lower())
        if live is None or not same_value(intended, live):
            mismatches.append(VariableMismatch(variable, intended, live))
    return mismatches


def describe_mismatch(mismatch: VariableMismatch) -> str:
    actual = "not a server variable" if mismatch.actual is None else f"actual {mismatch.actual}"
    hint = ""
    if mismatch.variable == "innodb_buffer_pool_size":
        hint = (
            " (InnoDB rounds the buffer pool to a multiple of "
            "innodb_buffer_pool_chunk_size x instances; pick such a size)"
        )
    return f"{mismatch.variable} intended {mismatch.intended}, {actual}{hint}"
