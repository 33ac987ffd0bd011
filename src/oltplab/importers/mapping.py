"""A mapping file for result layouts that cannot be guessed (`oltplab import SRC --map M`).

    [[files]]
    pattern = "series{series}/res{run}/sysbench.{mode}.{threads}.res"
    engine = "mariadb-s{series}"      # the engine's name
    family = "mariadb"                # a registered family (mysql, mariadb, ...) or unknown
    version = "10.{series}"           # default: the engine's name without its family
    tier = "default"                  # default "default"
    threads = "{threads}"
    repetition = "{run}"              # default 1
    workload = "{mode}"               # default oltp_read_write
    network = false                   # sysbench reached the engine over a network

    [files.values.mode]               # what a placeholder's text stands for
    ro = "oltp_read_only"
    rw = "oltp_read_write"

A pattern is a path under SRC; each `{name}` matches one or more characters other than
`/`. The first [[files]] entry whose pattern matches a file decides its cell.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from oltplab.base.errors import OltplabError
from oltplab.base.nesting import TooDeep, load_toml
from oltplab.importers.naming import safe
from oltplab.spec.catalog import FAMILIES as KNOWN_FAMILIES
from oltplab.spec.catalog import UNKNOWN_FAMILY
from oltplab.spec.fields import NAME_PATTERN

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
Template = Annotated[str, Field(min_length=1)]


class FileRule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: Template
    engine: Template
    family: str
    version: Template | None = None
    tier: Template = "default"
    threads: Template
    repetition: Template = "1"
    workload: Template = "oltp_read_write"
    network: bool = False
    values: dict[str, dict[str, str]] = Field(default_factory=dict)

    @field_validator("family")
    @classmethod
    def _family(cls, value: str) -> str:
        if value not in (*KNOWN_FAMILIES, UNKNOWN_FAMILY):
            raise ValueError(f"expects one of {', '.join((*KNOWN_FAMILIES, UNKNOWN_FAMILY))}")
        return value

    @property
    def regex(self) -> re.Pattern[str]:
        parts = re.split(r"(\{[A-Za-z_][A-Za-z0-9_]*\})", self.pattern)
        seen: set[str] = set()
        out = []
        for part in parts:
            if m := _PLACEHOLDER.fullmatch(part):
                name = m.group(1)
                out.append(f"(?P={name})" if name in seen else f"(?P<{name}>[^/]+?)")
                seen.add(name)
            else:
                out.append(re.escape(part))
        return re.compile("".join(out))


class LayoutMap(BaseModel):
    model_config = ConfigDict(extra="forbid")

    files: list[FileRule] = Field(min_length=1)


class MappedCell(BaseModel):
    """What a rule says of one file."""

    engine: str
    family: str
    version: str
    tier: str
    threads: int
    repetition: int
    workload: str
    network: bool


def load_map(path: Path) -> LayoutMap:
    try:
        data = load_toml(path.read_text())
    except OSError as exc:
        raise OltplabError(f"--map {path}: cannot read it ({exc.strerror})") from None
    except TooDeep as exc:
        raise OltplabError(f"{path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise OltplabError(f"{path}: not valid TOML: {exc}") from None
    try:
        layout = LayoutMap.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"]) or "(top)"
        message = str(error["msg"]).removeprefix("Value error, ")
        raise OltplabError(f"{path}: {where}: {message}") from None
    for index, rule in enumerate(layout.files):
        known = set(_PLACEHOLDER.findall(rule.pattern))
        for key in ("engine", "version", "tier", "threads", "repetition", "workload"):
            used = set(_PLACEHOLDER.findall(getattr(rule, key) or ""))
            if used - known:
                raise OltplabError(
                    f"{path}: files[{index}].{key}: {{{sorted(used - known)[0]}}} is not a "
                    f"placeholder of its pattern {rule.pattern!r}"
                )
    return layout


def _fill(template: str, found: dict[str, str], rule: FileRule) -> str:
    return _PLACEHOLDER.sub(
        lambda m: rule.values.get(m.group(1), {}).get(found[m.group(1)], found[m.group(1)]),
        template,
    )


def mapped_cell(layout: LayoutMap, relative: str) -> MappedCell | str | None:
    """The cell the first matching rule makes of a file (its path under SRC); why it makes
    none; or None when no rule's pattern matches."""
    for rule in layout.files:
        match = rule.regex.fullmatch(relative)
        if match is None:
            continue
        found = match.groupdict()
        engine = safe(_fill(rule.engine, found, rule))
        numbers = {}
        for key in ("threads", "repetition"):
            text = _fill(getattr(rule, key), found, rule)
            if not text.isdigit() or int(text) < 1:
                return f"{key} {text!r} is not a whole number of at least 1"
            numbers[key] = int(text)
        workload = _fill(rule.workload, found, rule)
        if not re.match(NAME_PATTERN, workload):
            return f"workload {workload!r} is not a name (letters, digits, . _ -)"
        version = _fill(rule.version, found, rule) if rule.version else None
        return MappedCell(
            engine=engine,
            family=rule.family,
            version=version or engine.removeprefix(f"{rule.family}-"),
            tier=safe(_fill(rule.tier, found, rule)),
            workload=workload,
            network=rule.network,
            **numbers,
        )
    return None
