"""run.json: everything needed to know where a results directory's numbers came from, and
to run them again (`oltplab rerun`).

It holds the spec (secrets removed), the engines with their binaries' sha256 and the
configuration files generated for them, sysbench with the sha256 of its Lua scripts, and
the host: kernel, CPU, memory, governor, transparent huge pages, swappiness and the disk
under each datadir. The file is rewritten atomically whenever the runner learns more.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from oltplab import __version__
from oltplab.base.errors import OltplabError
from oltplab.store.directory import ResultsDir, damaged
from oltplab.store.files import sha256_file, write_atomic
from oltplab.store.ledger import now

log = logging.getLogger("oltplab")
# 1: oltplab before the result model of issue 18 (the same keys, no model); 2: validated.
FORMAT = 2
READABLE_FORMATS = (1, 2)


class SpecRecord(BaseModel):
    text: str  # the spec, secrets removed
    base: str  # where its relative paths start
    origin: str = ""
    digest: str = ""


class RunJson(BaseModel):
    """run.json as oltplab writes it. Keys it does not know are kept as they are."""

    model_config = ConfigDict(extra="allow")

    format: int = 1  # files written before the key existed are format 1
    oltplab: str | None = None
    spec: SpecRecord | None = None
    host: dict[str, Any] = {}
    sysbench: dict[str, Any] = {}
    workloads: dict[str, dict[str, Any]] = {}
    # The telemetry devices chosen; files before the names were kept say on (True) or off.
    telemetry: bool | list[str] = True
    runs: list[dict[str, Any]] = []
    engines: dict[str, dict[str, Any]] = {}
    configs: dict[str, dict[str, str]] = {}
    links: dict[str, dict[str, Any]] = {}
    rerun_of: dict[str, Any] | None = None
    updated_at: str | None = None

    @field_validator("format")
    @classmethod
    def _readable(cls, value: int) -> int:
        if value not in READABLE_FORMATS:
            raise ValueError(
                f"format {value}; this oltplab reads formats "
                f"{', '.join(map(str, READABLE_FORMATS))} (a newer oltplab wrote it?)"
            )
        return value


def load_run_json(path: Path) -> RunJson:
    """A run.json, validated; one line naming the file and what is wrong otherwise."""
    try:
        return RunJson.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise OltplabError(f"{path}: not readable: {exc.strerror}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(the file)"
        message = str(first["msg"]).removeprefix("Value error, ")
        raise OltplabError(f"{path}: {where}: {message}") from None


# Spec keys whose values would be secrets; *_env and *_file name where a secret is, which
# is no secret.
_SECRET_LINE = re.compile(
    r"^(\s*[\"']?[\w.-]*(?:password|passwd|secret|token)[\w.-]*(?<!_env)(?<!_file)[\"']?\s*=\s*)(.+)$",
    re.I | re.M,
)


def redact_spec(text: str) -> str:
    return _SECRET_LINE.sub(lambda m: m.group(1) + '"***"', text)


def sysbench_facts(binary: str, version: str) -> dict[str, Any]:
    path = Path(binary).resolve()
    scripts = path.parent.parent / "share" / "sysbench"
    return {
        "version": version,
        "path": str(path),
        "sha256": sha256_file(path),
        "scripts": {
            str(lua.relative_to(scripts)): sha256_file(lua)
            for lua in sorted(scripts.rglob("*.lua"))
        },
    }


def _earlier(path: Path) -> dict[str, Any]:
    """What an earlier run of the directory recorded; an unreadable file is kept aside
    (run.json.damaged) rather than overwritten, and the run goes on with a new one."""
    if not path.is_file():
        return {}
    try:
        return load_run_json(path).model_dump(exclude_none=True)
    except OltplabError:
        pass
    kept = damaged(path)
    path.rename(kept)
    log.warning("%s was unreadable; kept as %s", path, kept.name)
    return {}


@dataclass(frozen=True)
class RunFacts:
    """What run.json says of a run when it begins."""

    spec_text: str
    spec_origin: str
    spec_base: Path  # where the spec's relative paths start
    spec_digest: str
    command: str
    sysbench: dict[str, Any]
    workloads: dict[str, dict[str, Any]]
    telemetry: list[str]  # the devices chosen
    rerun_of: dict[str, Any] | None
    host: dict[str, Any]


class RunRecord:
    """The results directory's run.json, updated as the run goes."""

    def __init__(self, results: Path, data: dict[str, Any]) -> None:
        self.path = ResultsDir(results).run_json
        self.data = data

    @classmethod
    def begin(cls, results: Path, facts: RunFacts) -> RunRecord:
        data = _earlier(ResultsDir(results).run_json)
        started = data.get("runs", [])
        data.update(
            format=FORMAT,
            oltplab=__version__,
            spec={
                "origin": facts.spec_origin,
                "base": str(facts.spec_base.resolve()),
                "digest": facts.spec_digest,
                "text": redact_spec(facts.spec_text),
            },
            host=facts.host,
            sysbench=facts.sysbench,
            workloads=facts.workloads,
            telemetry=facts.telemetry,
            runs=[*started, {"started_at": now(), "command": facts.command}],
        )
        data.setdefault("engines", {})
        data.setdefault("configs", {})
        if facts.rerun_of is not None:
            data["rerun_of"] = facts.rerun_of
        record = cls(results, data)
        record.save()
        return record

    def engine(self, name: str, facts: dict[str, Any]) -> None:
        self.data["engines"][name] = facts
        self.save()

    def respec(self, text: str, digest: str) -> None:
        """The spec the run now answers to, when it grew (a search adding rounds)."""
        self.data["spec"] |= {"text": redact_spec(text), "digest": digest}
        self.save()

    def link(self, engine: str, facts: dict[str, Any]) -> None:
        """The measured link to an engine on another host, and its shaping."""
        if self.data.setdefault("links", {}).get(engine) != facts:
            self.data["links"][engine] = facts
            self.save()

    def config(self, engine: str, tier: str, text: str) -> None:
        configs = self.data["configs"].setdefault(engine, {})
        if configs.get(tier) != text:
            configs[tier] = text
            self.save()

    def save(self) -> None:
        self.data["updated_at"] = now()
        write_atomic(self.path, json.dumps(self.data, indent=2, sort_keys=True) + "\n")


def read_run_json(results: Path) -> dict[str, Any]:
    path = ResultsDir(results).run_json
    try:
        record = load_run_json(path)
    except FileNotFoundError:
        raise OltplabError(
            f"{path}: not found; rerun needs a results directory written by oltplab run"
        ) from None
    if record.spec is None:
        raise OltplabError(f"{path}: no spec recorded (key spec); it cannot be rerun")
    return record.model_dump(exclude_none=True)


def differences(original: dict[str, Any], repeat: dict[str, Any]) -> list[str]:
    """What differs between the run and its rerun that could move the numbers."""
    found = []
    for key in (
        "kernel",
        "cpu_model",
        "cores",
        "memory_bytes",
        "cpu_governor",
        "transparent_hugepages",
        "swappiness",
    ):
        before, after = original.get("host", {}).get(key), repeat.get("host", {}).get(key)
        if before != after:
            found.append(f"host {key}: {before} -> {after}")
    before_sb, after_sb = original.get("sysbench", {}), repeat.get("sysbench", {})
    for key in ("version", "sha256", "scripts"):
        if before_sb.get(key) != after_sb.get(key):
            found.append(f"sysbench {key} differs")
    for name, facts in original.get("workloads", {}).items():
        again = repeat.get("workloads", {}).get(name, {})
        for key in ("script_sha256", "helpers_sha256"):  # a script and the files it loads
            if facts.get(key) != again.get(key):
                found.append(f"workload {name}: {key.split('_')[0]} sha256 differs")
    for name, facts in original.get("engines", {}).items():
        again = repeat.get("engines", {}).get(name)
        if again is None:
            continue
        for key in ("server_version", "binary_sha256"):
            if facts.get(key) != again.get(key):
                found.append(f"engine {name} {key}: {facts.get(key)} -> {again.get(key)}")
    return found
