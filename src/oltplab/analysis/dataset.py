"""Everything the analysis reads, loaded once from one or more results directories."""

from __future__ import annotations

import contextlib
import tomllib
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from oltplab.analysis.comparability import Traits, traits
from oltplab.base import metrics
from oltplab.base.errors import OltplabError
from oltplab.base.nesting import load_json, load_toml
from oltplab.base.sizes import parse_size
from oltplab.engines.config import parse_version
from oltplab.plan import Scenario
from oltplab.store.directory import ResultsDir
from oltplab.store.ledger import Ledger
from oltplab.store.provenance import load_run_json
from oltplab.store.rows import SupersededRow
from oltplab.store.status import Status
from oltplab.sysbench.error_codes import error_code_name
from oltplab.sysbench.transactions import KindResults
from oltplab.sysbench.validity import ERRORS, suspect_flags


@dataclass(frozen=True)
class CellRecord:
    key: str
    source: str
    engine: str
    family: str
    version: str
    scenario: str  # its name; `kind` says what it is
    network: bool
    rate: int  # open loop: transactions a second offered; 0: closed loop
    tier: str
    workload: str
    threads: int
    repetition: int
    status: str
    reason: str
    flags: tuple[str, ...]
    artifact: str
    tps: float | None
    qps: float | None
    reads_per_s: float | None
    writes_per_s: float | None
    other_per_s: float | None
    lat_avg_ms: float | None
    lat_pct_ms: float | None  # at the cell's own percentile
    lat_max_ms: float | None
    errors_per_s: float | None
    reconnects_per_s: float | None
    duration_s: float | None
    notes: str = ""
    machine: str = ""  # where it was measured
    percentile: int | None = None  # the latency percentile the run was asked for
    interval_s: float | None = None  # seconds between per-interval lines
    error_rate: float | None = None  # ignored errors per transaction
    # Measured in time slots (order = "sliced"): its samples are its slots, interval_s
    # long each, and its telemetry (the server's CPU) is read slot by slot, on their clock.
    sliced: bool = False
    started_at: str = ""  # when its measurement began (ISO 8601, UTC), as the ledger says
    # The errors sysbench ignored, by code, most frequent first: (code, count).
    ignored_errors: tuple[tuple[str, int], ...] = ()
    # What its workload kind measured beyond sysbench's summary (the TPC-C-like kind's
    # transaction types and NOPM), when it has a kind that does.
    kind_results: KindResults | None = None

    def metric(self, name: str) -> float | None:
        """A whole-run figure; `lat_p99_ms` is the latency at the 99th percentile, for a
        cell that measured that one (never another percentile under its name)."""
        if (wanted := metrics.percentile_of(name)) is not None:
            return self.lat_pct_ms if self.percentile == wanted else None
        if name in metrics.KIND_METRICS:
            return self.kind_results.metrics.get(name) if self.kind_results else None
        return getattr(self, name)

    @property
    def kind(self) -> Scenario:
        return Scenario(self.workload, self.network, self.rate)

    @property
    def suspect_flags(self) -> tuple[str, ...]:
        """The flags that put the numbers in doubt: not telemetry-gap (a side series is
        incomplete), nor errors at a rate too small to matter."""
        return suspect_flags(self.flags, self.error_rate)

    @property
    def flags_shown(self) -> str:
        """The flags as a reader needs them: errors with their rate and whether it counts."""
        shown = []
        for flag in self.flags:
            if flag == ERRORS and self.error_rate is not None:
                counted = "" if flag in self.suspect_flags else ", too few to matter"
                flag = f"errors ({self._dominant_error()}{counted})"
            shown.append(flag)
        return ", ".join(shown)

    def _dominant_error(self) -> str:
        """`1213 deadlock: 0.38% of transactions, 2 other codes`, or the rate alone when
        the codes were not counted (outputs of other harnesses)."""
        assert self.error_rate is not None
        if not self.ignored_errors:
            return f"{self.error_rate * 100:.2g}% of transactions"
        code, count = self.ignored_errors[0]
        share = self.error_rate * count / sum(n for _, n in self.ignored_errors)
        others = len(self.ignored_errors) - 1
        more = f", {others} other code{'s' if others > 1 else ''}" if others else ""
        return f"{error_code_name(code)}: {share * 100:.2g}% of transactions{more}"

    @property
    def measured(self) -> bool:
        return self.status == Status.DONE and self.tps is not None


@dataclass(frozen=True)
class CanaryRun:
    """One canary measurement: the same short cell every machine of a distributed run
    measures at its start and end."""

    machine: str
    moment: str  # "start" or "end", with the shard's name when merged
    tps: np.ndarray  # per-second TPS
    tps_whole_run: float


@dataclass(frozen=True)
class EngineInfo:
    name: str
    family: str
    version: str
    server_version: str
    binary_sha256: str | None
    source: str
    results: str

    @property
    def server_version_shown(self) -> str:
        """SELECT VERSION() where it was recorded; else the folder imported results came
        from, said to be one."""
        if self.server_version:
            return self.server_version
        try:
            folder = load_json(self.source).get("folder")
        except (ValueError, AttributeError):
            folder = None
        return f"not recorded (folder {folder})" if folder else "not recorded"


@dataclass
class Dataset:
    sources: list[Path]
    cells: list[CellRecord]
    series: dict[str, np.ndarray]  # each cell's per-second TPS
    engines: dict[str, EngineInfo]
    variables: dict[tuple[str, str], dict[str, str]]
    runs: list[dict[str, Any]]
    specs: list[str]
    tier_sizes: dict[str, int | None] = field(default_factory=dict)
    # Per cell key: (source, metric) -> [(second, value)], for the metrics analysed.
    telemetry: dict[str, dict[tuple[str, str], list[tuple[int, float]]]] = field(
        default_factory=dict
    )
    # Each results directory's run.json (absent for imported trees).
    run_records: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Repetitions are paired by round when the engines were interleaved within each round.
    paired: bool = False
    # How the rounds ran (the spec's protocol.order): alternating ones back to back.
    order: str = "as-listed"
    # Seconds cut from the start of every series instead of the MSER-5 cut (--cut-seconds).
    fixed_cut: int | None = None
    # Per cell key: sysbench's --histogram, (latency in ms, events) per bucket.
    histograms: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    # Each machine's canary measurements (shards of a distributed run).
    canaries: list[CanaryRun] = field(default_factory=list)
    slow_machine_pct: float = 10.0
    # Per cell key: the results it had before it was measured again (--rerun-disturbed).
    superseded: dict[str, list[SupersededRow]] = field(default_factory=dict)
    # The precision a run measured to (protocol.target_ci_pct and its measure), if any.
    target: metrics.Target | None = None
    # The adaptive stopping rule's settings its spec gave (stop_target_pct and
    # stop_min_seconds), each None where the spec left it to the default.
    stop_target_pct: float | None = None
    stop_min_seconds: int | None = None
    # What each results directory was measured under (spec, dataset, settings, host...).
    traits: list[Traits] = field(default_factory=list)
    # Derived values the analysis computes once per dataset (steady parts, bootstrap draws).
    memo: dict[Any, Any] = field(default_factory=dict, repr=False)

    @property
    def scenarios(self) -> list[str]:
        """Scenario names: the reference report's own first (read-write before read-only,
        local before network), then the other workloads in the order the spec listed them."""
        return [s.name for s in sorted(self.scenario_kinds.values(), key=self._scenario_order)]

    @property
    def scenario_kinds(self) -> dict[str, Scenario]:
        """What each scenario name stands for, from the stored columns."""
        return {c.scenario: c.kind for c in self.cells}

    def _scenario_order(self, scenario: Scenario) -> tuple[Any, ...]:
        if scenario.reference:
            return (0, scenario.network, scenario.workload != "oltp_read_write", scenario.rate)
        listed = list(self.workloads)
        position = listed.index(scenario.workload) if scenario.workload in listed else len(listed)
        return (1, position, scenario.network, scenario.rate)

    def tiers(self, scenario: str | None = None) -> list[str]:
        found = {c.tier for c in self.cells if scenario in (None, c.scenario)}
        return sorted(
            found, key=lambda t: (self.tier_sizes.get(t) is None, self.tier_sizes.get(t) or 0, t)
        )

    @property
    def workloads(self) -> dict[str, dict[str, Any]]:
        """What each workload ran (test or script, mix, distribution), from run.json."""
        found: dict[str, dict[str, Any]] = {}
        for record in self.run_records.values():
            found.update(record.get("workloads", {}))
        return dict(sorted(found.items(), key=lambda item: item[1].get("position", 0)))

    def engine_names(self) -> list[str]:
        return sorted(self.engines, key=self.engine_order)

    def engine_order(self, name: str) -> tuple[Any, ...]:
        info = self.engines[name]
        try:
            version: tuple[int, ...] = parse_version(info.version)
        except ValueError:
            version = ()
        return (info.family, version, name)

    def engines_in(self, scenario: str, tier: str) -> list[str]:
        """Engines with any cell (measured or failed) in this scenario and tier, in order."""
        found = {c.engine for c in self.cells if c.scenario == scenario and c.tier == tier}
        return [e for e in self.engine_names() if e in found]

    @cached_property
    def machines(self) -> list[str]:
        """The machines that measured these cells, when it was more than one (else [])."""
        found = sorted({c.machine for c in self.cells if c.machine})
        return found if len(found) > 1 else []

    @property
    def percentiles(self) -> list[int]:
        """The latency percentiles the measured cells were run with (95 when none says)."""
        return sorted({c.percentile for c in self.cells if c.percentile}) or [95]

    def threads(self, scenario: str, tier: str) -> list[int]:
        return sorted({c.threads for c in self.cells if c.scenario == scenario and c.tier == tier})


def _tier_size(tier: str, variables: dict[tuple[str, str], dict[str, str]]) -> int | None:
    try:
        return parse_size(tier)
    except ValueError:
        pass
    for (_, name), values in variables.items():
        pool = values.get("innodb_buffer_pool_size", values.get("shared_buffers"))
        if name == tier and pool and pool.isdigit():
            return int(pool)
    return None


def load(results: list[Path], cut_seconds: int | None = None) -> Dataset:
    """Cells, series, engines and provenance from each directory's ledger.

    An engine name found in more than one directory is labelled `name@directory`, so two
    runs of the same engine stay apart in every table.
    """
    ledgers = [(path, Ledger.open(path, create=False)) for path in results]
    try:
        names: dict[str, int] = defaultdict(int)
        for _, ledger in ledgers:
            for name in ledger.engines():
                names[name] += 1
        # Shards of one spec are parts of one matrix: an engine in several is one engine.
        digests = {ledger.meta("spec_digest") for _, ledger in ledgers}
        shards = all(ledger.meta("shard") for _, ledger in ledgers) and len(digests) == 1
        shared = set() if shards else {n for n, count in names.items() if count > 1}
        dataset = Dataset(list(results), [], {}, {}, {}, [], [])
        for path, ledger in ledgers:
            _load_one(dataset, path, ledger, shared)
            dataset.canaries += load_canaries(path)
    finally:
        for _, ledger in ledgers:
            ledger.close()
    dataset.tier_sizes = {t: _tier_size(t, dataset.variables) for t in dataset.tiers()}
    dataset.fixed_cut = cut_seconds
    return dataset


def _load_one(dataset: Dataset, path: Path, ledger: Ledger, shared: set[str]) -> None:
    def label(name: str) -> str:
        return f"{name}@{path.name}" if name in shared else name

    machines = ledger.machines()
    stored = stored_spec(ledger.meta("spec"))
    order = str(stored.get("protocol", {}).get("order", "as-listed"))
    for name, row in ledger.engines().items():
        dataset.engines[label(name)] = EngineInfo(
            label(name),
            row.family,
            row.version,
            row.server_version or "",
            row.binary_sha256,
            row.source,
            str(path),
        )
    ignored = ledger.ignored_errors()
    measured = ledger.kind_results()
    for cell in ledger.cells():
        if not cell.finished:
            continue
        engine = label(cell.engine)
        # A ledger whose run ended before it recorded the engine still names it in cells.
        dataset.engines.setdefault(
            engine,
            EngineInfo(engine, cell.family or "", cell.version or "", "", None, "", str(path)),
        )
        dataset.cells.append(
            CellRecord(
                key=f"{path.name}|{cell.key}",
                source=str(path),
                engine=engine,
                family=cell.family or "",
                version=cell.version or "",
                scenario=cell.scenario,
                network=cell.network,
                rate=cell.rate,
                tier=cell.tier,
                workload=cell.workload,
                threads=cell.threads,
                repetition=cell.repetition,
                status=cell.status,
                reason=cell.reason or "",
                flags=cell.flags,
                artifact=cell.artifact or "",
                tps=cell.figure("tps"),
                qps=cell.figure("qps"),
                reads_per_s=cell.figure("reads_per_s"),
                writes_per_s=cell.figure("writes_per_s"),
                other_per_s=cell.figure("other_per_s"),
                lat_avg_ms=cell.figure("lat_avg_ms"),
                lat_pct_ms=cell.figure("lat_pct_ms"),
                lat_max_ms=cell.figure("lat_max_ms"),
                errors_per_s=cell.figure("errors_per_s"),
                reconnects_per_s=cell.figure("reconnects_per_s"),
                duration_s=cell.figure("total_time_s"),
                notes=cell.notes,
                machine=machines.get(cell.key, ""),
                percentile=cell.percentile,
                interval_s=cell.figure("interval_s"),
                error_rate=cell.error_rate,
                sliced=order == "sliced",
                started_at=cell.started_at or "",
                ignored_errors=tuple(ignored.get(cell.key, ())),
                kind_results=measured.get(cell.key),
            )
        )
    for key, values in ledger.tps_series().items():
        dataset.series[f"{path.name}|{key}"] = values
    for key, series in ledger.telemetry(metrics.analysed).items():
        dataset.telemetry[f"{path.name}|{key}"] = series
    for key, rows in ledger.superseded().items():
        dataset.superseded[f"{path.name}|{key}"] = rows
    for key, buckets in ledger.latency_histograms().items():
        dataset.histograms[f"{path.name}|{key}"] = buckets
    run_json = ResultsDir(path).run_json
    # Provenance is shown when readable; the numbers are in the ledger either way.
    with contextlib.suppress(OSError, OltplabError):
        dataset.run_records[str(path)] = load_run_json(run_json).model_dump(exclude_none=True)
    for (engine, tier), variables in ledger.variables_by_tier().items():
        dataset.variables[(label(engine), tier)] = variables
    for run in ledger.runs():
        dataset.runs.append(
            {
                "results": str(path),
                "started_at": run.started_at,
                "status": run.status,
                **run.provenance,
            }
        )
    spec = ledger.meta("spec")
    record = dataset.run_records.get(str(path))
    dataset.traits.append(traits(str(path), spec, ledger.meta("spec_digest"), record))
    if spec:
        dataset.specs.append(spec)
        protocol = stored.get("protocol", {})
        dataset.order = order
        dataset.paired = dataset.order in ("interleaved", "alternating", "sliced", "random")
        dataset.target = dataset.target or _target(protocol)
        with contextlib.suppress(TypeError, ValueError):
            if dataset.stop_target_pct is None and "stop_target_pct" in protocol:
                dataset.stop_target_pct = float(protocol["stop_target_pct"])
            if dataset.stop_min_seconds is None and "stop_min_seconds" in protocol:
                dataset.stop_min_seconds = int(protocol["stop_min_seconds"])
        with contextlib.suppress(AttributeError, TypeError, ValueError):
            pct = stored.get("distribute", {}).get("slow_machine_pct")
            dataset.slow_machine_pct = float(pct) if pct else dataset.slow_machine_pct


def stored_spec(text: str | None) -> dict[str, Any]:
    """The spec a ledger keeps, as data (empty when there is none, or it does not parse)."""
    try:
        return load_toml(text) if text else {}
    except tomllib.TOMLDecodeError:
        return {}


def load_canaries(results: Path) -> list[CanaryRun]:
    """The canaries a shard (canary/start, canary/end) or a merge (canary/<shard>-<moment>)
    measured; a canary that failed has no series and is left out."""
    found = []
    for folder in sorted(ResultsDir(results).canary.glob("*/")):
        if not ResultsDir(folder).ledger.is_file():
            continue
        ledger = Ledger.open(folder, create=False)
        try:
            machines = ledger.machines()
            series = ledger.tps_series()
            for row in ledger.cells():
                if row.status == Status.DONE and row.key in series and row.tps is not None:
                    found.append(
                        CanaryRun(
                            machines.get(row.key, ""),
                            folder.name,
                            series[row.key],
                            row.tps,
                        )
                    )
        finally:
            ledger.close()
    return found


def _target(protocol: dict[str, Any]) -> metrics.Target | None:
    """A stored spec's precision target: its margin and measure (budget aside)."""
    margin = protocol.get("target_ci_pct")
    if margin is None:
        return None
    try:
        measure = metrics.measure_named(protocol.get("precision_measure") or "tps")
        return metrics.Target(float(margin), measure)
    except (TypeError, ValueError):
        return None
