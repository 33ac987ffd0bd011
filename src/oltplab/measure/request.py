"""What a run is asked to do: one typed value the command line, the shards and the
experiments build, and the runner reads (instead of a long list of keyword options); and
the display the runner tells its progress to."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from oltplab.plan.blocks import Shard
from oltplab.spec import Spec


@dataclass(frozen=True)
class RunRequest:
    spec: Spec
    spec_text: str  # as read (or as derived), recorded in run.json
    origin: str  # where the spec came from, for messages and provenance
    results: Path
    spec_base: Path | None = None  # what relative paths in the spec are relative to
    retry_failed: bool = False
    prepare_endpoints: bool = False
    cleanup_endpoints: bool = False
    until_cv: float | None = None  # adaptive repetitions until this TPS spread
    max_repetitions: int = 10
    telemetry: tuple[str, ...] | None = None  # device names; None: the default ones
    rerun_of: dict[str, Any] | None = None
    shard: Shard | None = None
    snapshots: Path | None = None  # a prepared-dataset store shared by machines
    others: bool = False  # the directory may hold cells of other specs (capacity probes)
    rerun_disturbed: bool = False


class Display(Protocol):
    """What the runner tells the person watching; the CLI draws it with Rich."""

    def start(self, total_seconds: float) -> None: ...
    def phase(self, label: str, seconds: float) -> None: ...
    def advance(self, seconds: float) -> None: ...
    def extend(self, seconds: float) -> None: ...
    def note(self, message: str) -> None: ...
    def stop(self) -> None: ...
