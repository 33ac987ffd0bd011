"""The noise floor: what a no-change comparison shows on this host.

The same engine runs as A and as B in interleaved rounds; any difference between them is
noise. The widest bound of their 95% intervals is the smallest difference this host can
tell apart, and is stored per host so reports can print it next to their threshold.
"""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from oltplab.analysis.dataset import Dataset
from oltplab.analysis.estimate import Comparison
from oltplab.analysis.points import Points
from oltplab.analysis.precision import round_spread_pct
from oltplab.base.errors import OltplabError
from oltplab.base.metrics import MEASURES, TPS, Measure
from oltplab.engines.cache import cache_root
from oltplab.spec.catalog import CATALOG
from oltplab.store.files import write_atomic


def calibration_spec(
    engine: str,
    repetitions: int,
    seconds: int,
    threads: list[int],
    workload: str,
    order: str = "interleaved",
) -> str:
    """The spec of a calibration run, as TOML text (it is stored with the results)."""
    if engine not in CATALOG:
        raise OltplabError(
            f"unknown engine {engine!r}: calibrate takes one of {', '.join(sorted(CATALOG))}"
        )
    kind, value = next(iter(CATALOG[engine].source.items()))
    engines = "".join(
        f'[[engines]]\nname = "{engine}-{side}"\nsource = {{ {kind} = "{value}" }}\n\n'
        for side in ("a", "b")
    )
    return (
        f"# oltplab calibrate {engine}: the same engine as A and B, {order}\n"
        f'name = "calibrate-{engine}"\nworkloads = ["{workload}"]\n\n{engines}'
        "[dataset]\ntables = 2\ntable_size = 10000\n\n"
        "[protocol]\nwarmup_ro_seconds = 5\nwarmup_rw_seconds = 5\nwarmup_threads = 2\n"
        f"measure_seconds = {seconds}\nthreads = {threads}\nrepetitions = {repetitions}\n"
        f'order = "{order}"\n'
        # Alternating and sliced calibrations plan --margin searches, which are isolated
        # unless a spec says otherwise; the interleaved one is the noise floor of plain runs.
        f"isolation = {'false' if order == 'interleaved' else 'true'}\n"
    )


@dataclass(frozen=True)
class NoiseFloor:
    engine: str
    comparisons: dict[tuple[str, int], Comparison]
    # Per measure: how much the A/B log ratio spreads from round to round, in percent (the
    # widest over the points calibrated): what `plan --margin` plans with.
    round_spread_pct: dict[str, float] = field(default_factory=dict)

    @property
    def value(self) -> float:
        bounds = [
            max(abs(c.low_pct), abs(c.high_pct))
            for c in self.comparisons.values()
            if c.low_pct is not None and c.high_pct is not None
        ]
        if not bounds:
            raise OltplabError("calibration gave no usable comparison: run longer cells")
        return max(bounds)


def noise_floor(dataset: Dataset, engine: str, measure: Measure = TPS) -> NoiseFloor:
    points = Points(dataset, measure=measure)
    comparisons = {}
    for scenario, tier, name, threads in sorted(points.samples()):
        if name != f"{engine}-a":
            continue
        versus = points.comparison(
            (scenario, tier, name, threads), (scenario, tier, f"{engine}-b", threads)
        )
        if versus is not None:
            comparisons[(scenario, threads)] = versus
    return NoiseFloor(engine, comparisons, round_spreads(dataset, engine))


def round_spreads(dataset: Dataset, engine: str) -> dict[str, float]:
    """Per measure, the widest round-to-round spread of A against B over the points."""
    found = {}
    for measure in MEASURES.values():
        samples = Points(dataset, measure=measure).samples()
        spreads = [
            spread
            for (scenario, tier, name, threads), a in samples.items()
            if name == f"{engine}-a"
            and (b := samples.get((scenario, tier, f"{engine}-b", threads))) is not None
            and (spread := round_spread_pct(a, b)) is not None
        ]
        if spreads:
            found[measure.name] = max(spreads)
    return found


@dataclass(frozen=True)
class Calibration:
    """What plan needs of this host: the round spread of each measure, the cell length it
    was measured with, and what a session costs beyond its warm-up and cells (restoring
    the datadir, starting and stopping the engine)."""

    round_spread_pct: dict[str, float]
    cell_seconds: int
    session_overhead_s: float


def session_overhead(wall_seconds: float, sessions: int, measured_seconds: float) -> float:
    return max(0.0, (wall_seconds - measured_seconds) / max(1, sessions))


def _store() -> Path:
    return cache_root() / "noise-floor.json"


def _key(order: str) -> str:
    """A host's calibration of interleaved rounds is under its name (what the report's noise
    floor reads); of alternating ones, under `<name>/alternating`: their spreads differ."""
    return platform.node() if order == "interleaved" else f"{platform.node()}/{order}"


def save(
    floor: NoiseFloor,
    results: Path,
    cell_seconds: int,
    session_overhead_s: float,
    order: str = "interleaved",
) -> None:
    path = _store()
    path.parent.mkdir(parents=True, exist_ok=True)
    known: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
    known[_key(order)] = {
        "engine": floor.engine,
        "noise_floor_pct": round(floor.value, 2),
        "round_spread_pct": {k: round(v, 3) for k, v in floor.round_spread_pct.items()},
        "cell_seconds": cell_seconds,
        "session_overhead_s": round(session_overhead_s, 1),
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "results": str(results),
    }
    write_atomic(path, json.dumps(known, indent=2))


def calibration_here(order: str = "interleaved") -> Calibration | None:
    """This host's calibration of rounds in this order, for planning, if `oltplab
    calibrate` has stored one."""
    path = _store()
    if not path.is_file():
        return None
    entry = json.loads(path.read_text()).get(_key(order))
    if not entry or not entry.get("round_spread_pct"):
        return None
    return Calibration(
        {str(k): float(v) for k, v in entry["round_spread_pct"].items()},
        int(entry["cell_seconds"]),
        float(entry["session_overhead_s"]),
    )


def load_for(hosts: set[str]) -> float | None:
    """The noise floor measured on the host these results came from, if there is one."""
    path = _store()
    if len(hosts) != 1 or not path.is_file():
        return None
    entry = json.loads(path.read_text()).get(next(iter(hosts)))
    return None if entry is None else float(entry["noise_floor_pct"])
