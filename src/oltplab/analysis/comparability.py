"""Whether two runs can be compared at all: the same dataset, engine settings, isolation,
order of rounds and host, from the same spec. A difference in any of these moves the
numbers as much as an engine does (an isolated run against a plain one measured -59% on
this project's own host), so every command where runs meet names it: `gate` and
`reproduced` refuse to give a verdict unless told to go on, and the views that only show
runs side by side (report, site, history, merge) mark it.

Each run's traits come from what it recorded: the spec its ledger keeps and its run.json
(the host, and the isolation it ran under). An imported tree records neither, so only
what both runs know is compared, and the gate names what was not (`unrecorded`).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from oltplab.base.errors import OltplabError
from oltplab.base.nesting import load_toml
from oltplab.base.telling import Note
from oltplab.base.wording import shown
from oltplab.spec import DatasetSpec
from oltplab.store.directory import ResultsDir
from oltplab.store.ledger import Ledger
from oltplab.store.provenance import load_run_json

ASPECTS = ("spec", "dataset", "engine settings", "isolation", "order", "host")


@dataclass(frozen=True)
class Traits:
    """What one results directory was measured under: aspect -> its settings, each a
    `key=value` item, for the aspects it recorded."""

    run: str
    aspects: dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class AspectDifference:
    aspect: str
    # Per run, the items of the aspect that not every run shares.
    differing: dict[str, tuple[str, ...]]

    def describe(self) -> str:
        """`isolation: a has server on CPU 1, sysbench on CPU 0; b has off`."""
        sides = "; ".join(
            f"{run} has {', '.join(items) if items else 'none of them'}"
            for run, items in self.differing.items()
        )
        return f"{self.aspect}: {sides}"


def _flat(prefix: str, value: Any) -> list[str]:
    """`dataset.tables=8`-style items of a TOML table, nested keys joined by dots."""
    if isinstance(value, dict):
        return [item for key in sorted(value) for item in _flat(f"{prefix}.{key}", value[key])]
    return [f"{prefix}={json.dumps(value, sort_keys=True)}"]


def _settings(spec: dict[str, Any]) -> list[str]:
    """The engine settings a spec asks for: its [config], each tier's, each engine's own."""
    items = _flat("config", spec.get("config", {}))
    for tier in spec.get("tiers", []):
        if isinstance(tier, dict):
            items += _flat(f"tier {tier.get('name', '?')}", tier)
    for engine in spec.get("engines", []):
        if isinstance(engine, dict) and isinstance(engine.get("config"), dict):
            items += _flat(f"engine {engine.get('name', '?')}.config", engine["config"])
    return items


def _dataset(spec: dict[str, Any]) -> list[str]:
    """The dataset's settings as the spec's model resolves them, those at their default
    left out: `rand_type = "uniform"` written out is the dataset the default gives. A
    [dataset] this version no longer reads is compared as written."""
    written = spec.get("dataset", {})
    try:
        resolved = DatasetSpec.model_validate(written)
    except ValidationError:
        return _flat("dataset", written)
    return _flat("dataset", resolved.model_dump(mode="json", exclude_defaults=True))


def _isolation(spec: dict[str, Any], record: dict[str, Any] | None) -> str | None:
    """As the run recorded it (its CPU split, page cache only, or off); from the spec for
    runs that recorded no more."""
    host = (record or {}).get("host", {})
    if isinstance(host, dict) and host.get("isolation"):
        return str(host["isolation"])
    if spec:
        return "on" if spec.get("protocol", {}).get("isolation") else "off"
    return None


def traits(
    run: str, spec_text: str | None, spec_digest: str | None, record: dict[str, Any] | None
) -> Traits:
    """A run's traits from the spec text its ledger keeps, that spec's digest and its
    run.json (any of them may be missing: an imported tree has none)."""
    try:
        spec = load_toml(spec_text) if spec_text else {}
    except tomllib.TOMLDecodeError:
        spec = {}
    aspects: dict[str, tuple[str, ...]] = {}
    if spec_digest:
        aspects["spec"] = (f"digest={spec_digest[:12]}",)
    if spec:
        aspects["dataset"] = tuple(_dataset(spec)) or ("defaults",)
        aspects["engine settings"] = tuple(_settings(spec)) or ("defaults",)
        aspects["order"] = (str(spec.get("protocol", {}).get("order", "as-listed")),)
    isolation = _isolation(spec, record)
    if isolation is not None:
        aspects["isolation"] = (isolation,)
    host = (record or {}).get("host", {})
    if isinstance(host, dict) and host.get("hostname"):
        aspects["host"] = tuple(
            f"{key}={host[key]}" for key in ("hostname", "cpu_model", "cores") if key in host
        )
    return Traits(run, aspects)


def mismatches(runs: list[Traits]) -> list[AspectDifference]:
    """Each aspect that two or more runs recorded and recorded differently, in ASPECTS'
    order; an aspect only some runs recorded is compared among those."""
    found = []
    for aspect in ASPECTS:
        known = {t.run: t.aspects[aspect] for t in runs if aspect in t.aspects}
        if len(set(known.values())) < 2:
            continue
        shared = set.intersection(*(set(items) for items in known.values()))
        differing = {
            run: tuple(item for item in items if item not in shared) for run, items in known.items()
        }
        found.append(AspectDifference(aspect, differing))
    return found


def unrecorded(runs: list[Traits]) -> list[str]:
    """Each run that did not record every aspect, with those it did not: they could not be
    compared with any run (`cand recorded no spec, dataset, engine settings`)."""
    missing = {t.run: [a for a in ASPECTS if a not in t.aspects] for t in runs}
    return [f"{run} recorded no {', '.join(lacks)}" for run, lacks in missing.items() if lacks]


def traits_of(results: Path, label: str | None = None) -> Traits:
    """A results directory's traits, read from its ledger and run.json."""

    ledger = Ledger.open(results, create=False, journal=False)
    try:
        spec_text, digest = ledger.meta("spec"), ledger.meta("spec_digest")
    finally:
        ledger.close()
    try:
        record = load_run_json(ResultsDir(results).run_json).model_dump(exclude_none=True)
    except (OSError, OltplabError):
        record = None
    return traits(label or str(results), spec_text, digest, record)


def unlike(results: list[Path], *, refuse: bool, expected: tuple[str, ...] = ()) -> list[str]:
    """What differs between these runs' setups; where a verdict is asked (refuse), any
    difference is an error naming them all instead. The `expected` aspects are left out
    (shards run on machines of their own, by design)."""
    runs = [traits_of(path, shown(path)) for path in results]
    found = [m.describe() for m in mismatches(runs) if m.aspect not in expected]
    if found and refuse:
        raise OltplabError(
            f"{' and '.join(shown(p) for p in results)} were not measured alike ("
            + "; ".join(found)
            + "): a verdict would be the setup's, not the engine's; measure them alike, or "
            "pass --allow-mismatch to judge anyway"
        )
    return found


def uncompared(results: list[Path]) -> list[str]:
    """What could not be compared between these runs, as some did not record it (an
    imported tree records no setup)."""
    return unrecorded([traits_of(path, shown(path)) for path in results])


def alike_notes(unalike: list[str], unknown: Sequence[str] = ()) -> list[Note]:
    """The notes said beside a verdict or a report over several runs."""
    return [Note(f"note: not alike: {said}") for said in unalike] + [
        Note(f"note: not compared: {said}") for said in unknown
    ]
