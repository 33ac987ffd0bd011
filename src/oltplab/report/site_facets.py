"""What the site's index filters its runs by: each run's spec, dataset and engines, as
the run recorded them. An imported tree records no spec, so its spec and dataset are
"not recorded", a value of the filter like any other: such runs are found together."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from oltplab.analysis.dataset import Dataset

NOT_RECORDED = "not recorded"


@dataclass(frozen=True)
class Facets:
    spec: str  # the spec's name and digest, or its digest alone
    dataset: str  # its [dataset] settings, "defaults", or NOT_RECORDED
    engines: tuple[str, ...]


def _spec(dataset: Dataset) -> str:
    recorded = dataset.traits[0]
    digests = recorded.aspects.get("spec", ())
    if not digests:
        return NOT_RECORDED
    digest = digests[0].removeprefix("digest=")
    spec = dataset.run_records.get(recorded.run, {}).get("spec") or {}
    origin = str(spec.get("origin", ""))
    if not origin:
        return f"digest {digest}"
    # A file by its own name (the folder it was run from says nothing of the spec); a spec
    # oltplab made ("demo spec", "rerun of ...") by what it says.
    named = PurePath(origin).name if origin.endswith(".toml") else origin
    return f"{named} ({digest})"


def facets_of(dataset: Dataset) -> Facets:
    """One results directory's facets (a site loads each directory on its own)."""
    settings = dataset.traits[0].aspects.get("dataset")
    shown = (
        ", ".join(item.removeprefix("dataset.") for item in settings) if settings else NOT_RECORDED
    )
    return Facets(_spec(dataset), shown, tuple(sorted(dataset.engines)))
