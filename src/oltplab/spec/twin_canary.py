"""The per-run A/A canary: `[protocol] canary = true` measures an identical twin of the
first engine (the same binary, an instance of its own) in every round beside the others.
Since nothing differs between the two, a verdict of DIFFERENT between them says the host
cannot tell apart differences this small (analysis/canary_verdicts.py judges it)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from oltplab.spec.catalog import CATALOG

SUFFIX = "-canary"


def twin_name(engine: str) -> str:
    return engine + SUFFIX


def with_twin(engines: list[Any]) -> list[Any]:
    """The engine list (as written, series already expanded) with the first engine's twin
    right after it, unless it is there already (a spec read back from a run's own record);
    an engine of that name with another source is refused, never taken for the twin."""
    first = _as_data(engines[0])
    if not isinstance(first, dict) or not isinstance(first.get("name"), str):
        return engines  # the engine list's own validation says what is wrong
    name = twin_name(first["name"])
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
    source_of_twin = twin.get("source")
    there = next((e for e in map(_as_data, engines) if _name_of(e) == name), None)
    if there is None:
        return [engines[0], twin, *engines[1:]]
    if not isinstance(there, dict) or _binaries(there.get("source")) != _binaries(source_of_twin):
        raise ValueError(
            f"protocol.canary: engine {name!r} is the name of {first['name']!r}'s canary twin, "
            "but its source is another; rename it (the twin is added by itself)"
        )
    return engines  # a spec read back from a run's own record


def _binaries(source: Any) -> Any:
    """What says which binaries a source gives, written or read back from a record (which
    lists its defaults: `also = []`)."""
    if not isinstance(source, dict):
        return source
    return {
        k: list(v) if isinstance(v, tuple) else v for k, v in source.items() if v not in ([], ())
    }


def _as_data(engine: Any) -> Any:
    return (
        engine.model_dump(mode="json", exclude_none=True)
        if isinstance(engine, BaseModel)
        else engine
    )


def _name_of(engine: Any) -> object:
    return engine.get("name") if isinstance(engine, dict) else getattr(engine, "name", None)
