"""The per-run A/A canary: `[protocol] canary = true` measures an identical twin of the
first engine (the same binary, an instance of its own) in every round beside the others.
Since nothing differs between the two, a verdict of DIFFERENT between them says the host
cannot tell apart differences this small (analysis/canary.py judges it)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from oltplab.spec.catalog import CATALOG

SUFFIX = "-canary"


def twin_name(engine: str) -> str:
    return engine + SUFFIX


def with_twin(engines: list[Any]) -> list[Any]:
    """The engine list (as written, series already expanded) with the first engine's twin
    right after it, unless it is there already (a spec read back from a run's own record)."""
    first = engines[0]
    if isinstance(first, BaseModel):
        first = first.model_dump(mode="json", exclude_none=True)
    if not isinstance(first, dict) or not isinstance(first.get("name"), str):
        return engines  # the engine list's own validation says what is wrong
    name = twin_name(first["name"])
    if any(_name_of(e) == name for e in engines):
        return engines
    source = first.get("source")
    if isinstance(source, dict) and "endpoint" in source:
        raise ValueError(
            f"protocol.canary: the first engine, {first['name']!r}, is an endpoint; a canary "
            "twins a private instance, so list a provisioned engine first"
        )
    twin: dict[str, Any] = {**first, "name": name}
    if source is None and first["name"] in CATALOG:
        entry = CATALOG[first["name"]]
        twin |= {"source": entry.source, "family": entry.family, "version": entry.version}
    return [engines[0], twin, *engines[1:]]


def _name_of(engine: Any) -> object:
    return engine.get("name") if isinstance(engine, dict) else getattr(engine, "name", None)
