"""Capacity under an SLO with real engines: for each engine and tier of a spec, first the
closed-loop peak (and the engine's time per transaction at light load), then the search of
analysis.capacity, each probe an open-loop cell at one rate with as many client threads as
Little's law asks for that time (analysis.capacity.client_threads), all measured into one
results directory that `oltplab report` reads like any other."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from oltplab.analysis.capacity import (
    MAX_THREADS,
    Found,
    Measured,
    Objective,
    client_threads,
    judge,
    max_client_threads,
    search,
)
from oltplab.analysis.dataset import load
from oltplab.analysis.latency import Histogram, percentile_estimate
from oltplab.base.asking import (
    RESOLUTION,
    option,
    required,
    resolution_option,
    results_option,
    spec_argument,
)
from oltplab.base.errors import OltplabError
from oltplab.base.given import parse_percent
from oltplab.base.telling import Rows, Told
from oltplab.base.wording import counted
from oltplab.measure.request import Display, RunRequest
from oltplab.measure.runner import run
from oltplab.plan import Scenario
from oltplab.spec import Spec, derived_spec, load_spec
from oltplab.store.directory import ResultsDir
from oltplab.store.files import write_atomic
from oltplab.sysbench.validity import SATURATED


@dataclass(frozen=True, kw_only=True)
class CapacityAsked:
    spec_path: Path = spec_argument()
    slo: str = required('The objective, e.g. "p99<10ms" (a percentile under a limit).')
    results: Path = results_option("Results directory for every probe.")
    start: int = option(100, "The first rate offered (tps).", min=1, max=10_000_000)
    resolution: str = resolution_option(
        "bisect until the bracket is within PCT (0.5% to 50%).", "5%"
    )
    max_repetitions: int = option(
        3, "Runs at one rate at most before its point decides.", min=1, max=100
    )


def capacity_probed(asked: CapacityAsked, display: Display) -> Told:
    """Every engine and tier's capacity under the objective, ranked, beside its closed-loop
    peak; where capacity.json is, and the report that draws every probe."""
    objective = Objective.parse(asked.slo)
    bracket_pct = parse_percent(asked.resolution, RESOLUTION)
    if not 0.5 <= bracket_pct <= 50:
        raise OltplabError(f"{RESOLUTION} {asked.resolution}: expected 0.5% to 50%, e.g. 5%")
    found = capacities(
        load_spec(asked.spec_path), objective, asked.results.resolve(), display,
        start=asked.start, precision=bracket_pct / 100, max_repetitions=asked.max_repetitions,
    )  # fmt: skip
    columns = ("engine", "tier", "sustains", "closed-loop peak", "of the peak")
    rows = tuple(
        (one.engine, one.tier, one.text(),
         "-" if one.closed_peak is None else f"{one.closed_peak:,.0f} tps",
         "-" if one.share_of_peak is None else f"{one.share_of_peak:.0%}")
        for one in found
    )  # fmt: skip
    return Told(
        (
            Rows(f"Capacity at {objective}", columns, rows, folded=columns),
            *(one.sustains() for one in found if one.sustained),
            str(ResultsDir(asked.results).capacity_json),
        ),
        f"oltplab report {asked.results} (latency against offered load, every probe)",
    )


class Prober:
    """Measures one engine and tier of the spec at the rates the search asks for."""

    def __init__(
        self,
        spec: Spec,
        engine: str,
        tier: str,
        objective: Objective,
        results: Path,
        display: Display,
    ) -> None:
        self.spec = spec
        self.objective = objective
        self.engine = engine
        self.tier = tier
        self.results = results
        self.display = display
        self.workload = spec.workloads[0].name
        self.cores = len(os.sched_getaffinity(0))  # sysbench runs here, beside the engine
        self.closed: dict[int, float] = {}  # closed-loop TPS by thread count
        # Median latency (ms) of each rate that met the objective: what sizes the next
        # probes' clients.
        self.medians: dict[int, float] = {}

    def spec_for(self, *, rate: int, repetitions: int, threads: list[int]) -> tuple[Spec, str]:
        data = self.spec.model_dump(mode="json", exclude_none=True, exclude={"distribute"})
        data["engines"] = [e for e in data["engines"] if e["name"] == self.engine]
        if data["tiers"]:
            data["tiers"] = [t for t in data["tiers"] if t["name"] == self.tier]
        data["workloads"] = data["workloads"][:1]
        data["placements"] = data["placements"][:1]
        # Fixed, so every probe's cells are of one definition whatever its thread count.
        data["config"]["max_connections"] = MAX_THREADS + 32
        data["protocol"].update(
            threads=threads,
            repetitions=repetitions,
            rates=[rate] if rate else [],
            closed_loop=not rate,
            order="as-listed",
            # The open-loop client needs a CPU of its own to offer what the server can take:
            # shared, it tops out near 34,000 point selects a second on 2 cores
            # (docs/how-to/capacity.md).
            isolation=self.spec.protocol.isolated_unless_said(),
        )
        return derived_spec(data, f"capacity probe of {self.engine}")

    def _run(self, spec: Spec, text: str, origin: str) -> None:
        outcome = run(RunRequest(spec, text, origin, self.results, others=True), self.display)
        if outcome.interrupted:
            raise KeyboardInterrupt
        # A probe the engine could not keep up with at all is an answer (a miss), not an error.
        failed = [r for r in outcome.failed if SATURATED not in r.flags]
        if failed:
            raise OltplabError(f"{origin}: {failed[0].reason}")

    def measure(self, rate: int, repetitions: int) -> Measured:
        percentile = self.objective.percentile
        below = [r for r in self.medians if r < rate]
        open_loop_ms = self.medians[max(below)] if below else None
        threads, short = client_threads(rate, self.closed, self.cores, open_loop_ms)
        spec, text = self.spec_for(rate=rate, repetitions=repetitions, threads=[threads])
        self._run(spec, text, f"capacity probe {self.engine} {rate} tps")
        dataset = load([self.results])
        scenario = Scenario(self.workload, False, rate).name
        wanted = (self.engine, self.tier, scenario, threads)
        probed = [
            c for c in dataset.cells
            if (c.engine, c.tier, c.scenario, c.threads) == wanted and c.repetition <= repetitions
        ]  # fmt: skip
        cells = [c for c in probed if c.measured]
        runs = [
            Histogram.of(dataset.histograms[c.key]) for c in cells if c.key in dataset.histograms
        ]
        label = f"{self.engine}|{rate}"
        latency = percentile_estimate(runs, percentile, label)
        saturated = any(SATURATED in c.flags for c in probed)
        measured = Measured(latency, saturated, len(cells), threads=threads)
        met = judge(self.objective, measured)
        median = percentile_estimate(runs, 50, label)
        if met and median is not None:
            self.medians[rate] = median.point
        client_limited = short and met is False
        self.display.note(
            f"{self.engine} {self.tier} at {rate:,} tps offered ({counted(threads, 'thread')}, "
            f"{len(cells)} run(s)): p{percentile:g} "
            f"{'-' if latency is None else f'{latency.point:.2f} ms'}"
            + (" (saturated)" if saturated else "")
            + (
                f"; missed with {threads} client threads where Little's law asks for more "
                f"than {max_client_threads(self.cores)} on {self.cores} core(s): the "
                "client's limit, not the engine's"
                if client_limited else ""
            )
        )  # fmt: skip
        return replace(measured, client_limited=client_limited)

    def closed_loop(self) -> float | None:
        """Closed-loop TPS at the spec's thread counts: the peak, as reports quote it; and
        the engine's time per transaction, which sizes the probes' clients."""
        spec, text = self.spec_for(rate=0, repetitions=1, threads=self.spec.protocol.threads)
        self._run(spec, text, f"closed loop {self.engine}")
        dataset = load([self.results])
        found = [
            c for c in dataset.cells
            if c.engine == self.engine and c.tier == self.tier and not c.rate and c.tps
        ]  # fmt: skip
        self.closed = {c.threads: c.tps or 0.0 for c in found}
        return max(self.closed.values(), default=None)


def capacities(
    spec: Spec,
    objective: Objective,
    results: Path,
    display: Display,
    *,
    start: int,
    precision: float,
    max_repetitions: int,
) -> list[Found]:
    """Every engine and tier's capacity, ranked, written to capacity.json."""
    found: list[dict[str, Any]] = []
    for engine in (e.name for e in spec.engines):
        for tier in (t.name for t in spec.tier_list):
            prober = Prober(spec, engine, tier, objective, results, display)
            peak = prober.closed_loop()
            capacity = search(
                prober.measure,
                objective, start=start, precision=precision, max_repetitions=max_repetitions,
            )  # fmt: skip
            found.append(
                {
                    "engine": engine,
                    "tier": tier,
                    "objective": str(objective),
                    "sustained_tps": capacity.sustained,
                    "missed_tps": capacity.missed,
                    "client_limit_tps": capacity.client_limit,
                    "closed_loop_peak_tps": peak,
                    "closed_loop_tps": {str(n): tps for n, tps in prober.closed.items()},
                    "client_threads_at_most": max_client_threads(prober.cores),
                    "probes": [
                        {
                            "rate": p.rate,
                            "meets": p.meets,
                            "undecided": p.undecided,
                            "repetitions": p.measured.repetitions,
                            "threads": p.measured.threads,
                            "saturated": p.measured.saturated,
                            "client_limited": p.measured.client_limited,
                            "latency_ms": None if p.measured.latency is None
                            else [p.measured.latency.point, p.measured.latency.low,
                                  p.measured.latency.high],
                        }
                        for p in capacity.probes
                    ],
                }
            )  # fmt: skip
    found.sort(key=lambda r: -(r["sustained_tps"] or 0))
    write_atomic(ResultsDir(results).capacity_json, json.dumps(found, indent=2) + "\n")
    return [Found.of(row) for row in found]
