"""The benchmark spec: a validated TOML description of the whole matrix.

Everything the runner does is derived from a `Spec`; nothing is provisioned before the
spec, and the host it runs on, have been checked.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import tomli_w
from pydantic import (
    BeforeValidator,
    Field,
    StrictBool,
    ValidationError,
    field_validator,
    model_validator,
)

from oltplab.base.errors import SpecError
from oltplab.base.nesting import TooDeep, load_toml
from oltplab.base.sizes import format_size
from oltplab.base.stopping_rule import StopRule
from oltplab.spec.catalog import series
from oltplab.spec.distribute import DistributeSpec, ShardCanary
from oltplab.spec.fields import (
    ByteSize,
    Count,
    ExtraOptions,
    Family,
    Name,
    NonNegativeCount,
    OptionalSeconds,
    OrderName,
    Rates,
    Scalar,
    Seconds,
    StrictModel,
    ThreadCount,
    whole,
)
from oltplab.spec.messages import describe
from oltplab.spec.placements import LOCAL_HOST, HostSpec, NetworkSpec, PlacementSpec
from oltplab.spec.sources import EngineSpec
from oltplab.spec.twin_canary import with_twin
from oltplab.spec.verdicts import CompareSpec
from oltplab.spec.workload import MIX_PRESETS as MIX_PRESETS
from oltplab.spec.workload import RandType, WorkloadSpec, paced_as_terminals, workload_from_name

# --- configuration intent --------------------------------------------------------------------


class Intent(StrictModel):
    """What the server should be like, said once and translated per family and version."""

    buffer_pool: ByteSize | None = None
    redo_capacity: ByteSize | None = None
    # Not Literal[0, 1, 2], which takes true for 1.
    flush_log_at_trx_commit: Annotated[int, whole(0, 2)] | None = None
    binlog: StrictBool | None = None
    sync_binlog: NonNegativeCount | None = None
    binlog_format: Literal["ROW", "STATEMENT", "MIXED"] | None = None
    doublewrite: StrictBool | None = None
    io_capacity: Count | None = None
    io_capacity_max: Count | None = None
    max_connections: Annotated[int, whole(1, 100_000, " of connections")] | None = None
    charset: Annotated[str, Field(pattern=r"^\w+$")] | None = None
    flush_method: Annotated[str, Field(pattern=r"^\w+$")] | None = None
    extra: dict[Family, ExtraOptions] = {}


DEFAULT_INTENT = Intent(
    buffer_pool=128 * 1024**2,
    redo_capacity=256 * 1024**2,
    flush_log_at_trx_commit=1,
    binlog=True,
    sync_binlog=1,
    binlog_format="ROW",
    doublewrite=True,
    io_capacity=2500,
    io_capacity_max=5000,
    charset="utf8mb4",
)


class TierSpec(Intent):
    name: Name


@dataclass(frozen=True)
class ResolvedIntent:
    """An intent with every field decided: defaults < [config] < the tier."""

    buffer_pool: int
    redo_capacity: int
    flush_log_at_trx_commit: int
    binlog: bool
    sync_binlog: int
    binlog_format: str
    doublewrite: bool
    io_capacity: int
    io_capacity_max: int
    max_connections: int
    charset: str
    flush_method: str | None
    extra: dict[str, dict[str, Scalar]]


# --- dataset, protocol ------------------------------------------------------------------------


class DatasetSpec(StrictModel):
    tables: Annotated[int, whole(1, 100_000, " of tables")] = 20
    table_size: Annotated[int, whole(1, 10**11, " of rows")] = 5_000_000
    # The TPC-C-like kind's warehouses (workloads/tpcc.py); sbtest's tables ignore it.
    warehouses: Annotated[int, whole(1, 100_000, " of warehouses")] | None = None
    # How rows are picked; a workload may pick its own.
    rand_type: RandType = "uniform"
    rand_pareto_h: Annotated[float, Field(gt=0, lt=1)] | None = None


class ProtocolSpec(StrictModel):
    warmup_ro_seconds: OptionalSeconds = 180
    warmup_rw_seconds: OptionalSeconds = 600
    warmup_threads: ThreadCount = 16
    measure_seconds: Seconds = 900
    report_interval: Annotated[int, whole(1, 3600, " of seconds")] = 1
    threads: Annotated[list[ThreadCount], Field(min_length=1, max_length=1000)] = [
        1, 4, 16, 32, 64, 128, 256, 512
    ]  # fmt: skip
    repetitions: Annotated[int, whole(1, 1000, " of repetitions")] = 1
    # Open loop: each rate (transactions a second offered, all threads together) is a
    # dimension of the matrix like threads; closed_loop keeps the closed-loop cells beside.
    rates: Rates = []
    closed_loop: StrictBool = True
    order: OrderName = "as-listed"
    # sliced: the cells of a round run at once, each in its own slots of this many seconds
    # in turn (measure/sliced.py). A quarter second: this host's speed swings within a few
    # seconds, and in bench/precision.py quarter-second slots decided a planted 7% in 10
    # trials of 10 with the narrowest paired TPS interval (docs/how-to/precision.md).
    slice_seconds: Annotated[float, Field(ge=0.05, le=60)] = 0.25
    seed: Annotated[int, whole(0, 2**32 - 1)] = 0
    sysbench_grace_seconds: Seconds = 60
    start_timeout_seconds: Seconds = 300
    stop_timeout_seconds: Seconds = 300
    # Paired rounds go on until every comparison is decided against +-this many percent
    # (DIFFERENT or SAME), or the budget (of the search's time, in whole seconds or in
    # minutes, one of them) is spent: see analysis/precision.
    target_ci_pct: Annotated[float, Field(gt=0, le=100)] | None = None
    budget_seconds: Seconds | None = None
    budget_minutes: Annotated[int, whole(1, 7 * 24 * 60, " of minutes")] | None = None
    # None: the workloads' own (NOPM when every workload is TPC-C-like, else TPS).
    precision_measure: Literal["tps", "cpu_us_per_txn", "switches_per_txn", "nopm"] | None = None
    # The server and sysbench on CPUs of their own, the datadir's pages evicted from the page
    # cache before each session (see isolation.py).
    isolation: StrictBool = False
    # An identical twin of the first engine measured in every round, its verdict against
    # the first a check of the host (spec/twin_canary.py, analysis/canary_verdicts.py).
    canary: StrictBool = False
    # adaptive: a closed-loop cell stops once its steady mean is known to +-stop_target_pct
    # (95%) and the engine's state shows no trend, never before stop_min_seconds nor before
    # the horizon its block's first repetition (which runs whole) showed; measure_seconds is
    # the most it runs. A warm-up ends by the rule alone, its seconds the most
    # (base/stopping_rule.py has the rule, `oltplab replay` tries it on recorded cells).
    stop: Literal["fixed", "adaptive"] = "fixed"
    stop_target_pct: Annotated[float, Field(gt=0, le=50)] = 2.0
    stop_min_seconds: Seconds = 60

    def stop_rule(self, most_seconds: int | None = None) -> StopRule:
        """The adaptive rule for a phase of at most this many seconds (a cell's by default):
        a warm-up ends by it too."""
        most = self.measure_seconds if most_seconds is None else most_seconds
        return StopRule(self.stop_target_pct, min(self.stop_min_seconds, most), most)

    def isolated_unless_said(self) -> bool:
        """For experiments that measure better isolated: on, unless the spec sets it."""
        return self.isolation if "isolation" in self.model_fields_set else True

    @field_validator("threads")
    @classmethod
    def _distinct_threads(cls, threads: list[int]) -> list[int]:
        if len(set(threads)) != len(threads):
            raise ValueError("thread counts must be distinct")
        return threads

    @property
    def budget(self) -> float | None:
        """The precision search's budget in seconds; None: no limit."""
        if self.budget_minutes is not None:
            return self.budget_minutes * 60.0
        return float(self.budget_seconds) if self.budget_seconds is not None else None

    @model_validator(mode="after")
    def _one_budget(self) -> ProtocolSpec:
        if self.budget_seconds is not None and self.budget_minutes is not None:
            raise ValueError("give budget_seconds or budget_minutes, not both")
        return self

    @model_validator(mode="after")
    def _adaptive_cells_can_stop(self) -> ProtocolSpec:
        if self.stop == "adaptive" and self.order == "sliced":
            raise ValueError('stop = "adaptive" needs whole cells: sliced rounds share seconds')
        if self.stop == "adaptive" and self.stop_min_seconds > self.measure_seconds:
            # Cells this short would all run their full length and end unsettled.
            default = "" if "stop_min_seconds" in self.model_fields_set else " (the default)"
            raise ValueError(
                f"stop_min_seconds {self.stop_min_seconds}{default} is beyond measure_seconds "
                f"{self.measure_seconds}: an adaptive cell runs at least the one and at most "
                "the other; measure longer, lower stop_min_seconds, or keep stop fixed"
            )
        return self


def _expand_series(value: Any) -> Any:
    """`{series = "mariadb >=10.4, <12"}` in the engine list stands for the catalog's
    releases in that range, in release order."""
    if not isinstance(value, list):
        return value
    expanded: list[Any] = []
    for item in value:
        if isinstance(item, dict) and "series" in item:
            extra = {k: v for k, v in item.items() if k != "series"}
            if set(extra) - {"extra"}:
                raise ValueError(f"a series entry takes only `series` and `extra` (got {item})")
            expanded += [{"name": name, **extra} for name in series(str(item["series"]))]
        else:
            expanded.append(item)
    return expanded


class Spec(StrictModel):
    name: Name = "oltplab"
    engines: Annotated[list[EngineSpec], Field(min_length=1), BeforeValidator(_expand_series)]
    config: Intent = Intent()
    tiers: list[TierSpec] = []
    dataset: DatasetSpec = DatasetSpec()
    workloads: Annotated[
        list[
            Annotated[
                WorkloadSpec,
                # A workload's name alone stands for the built-in or preset of that name.
                BeforeValidator(workload_from_name, json_schema_input_type=str | WorkloadSpec),
            ]
        ],
        Field(min_length=1),
    ] = [WorkloadSpec(name="oltp_read_write")]
    protocol: ProtocolSpec = ProtocolSpec()
    hosts: list[HostSpec] = []
    placements: Annotated[list[PlacementSpec], Field(min_length=1)] = [PlacementSpec()]
    network: NetworkSpec = NetworkSpec()
    distribute: DistributeSpec = DistributeSpec()
    compare: CompareSpec = CompareSpec()

    @model_validator(mode="before")
    @classmethod
    def _paced(cls, data: Any) -> Any:
        return paced_as_terminals(data)

    @model_validator(mode="before")
    @classmethod
    def _canary(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("engines"), list):
            return data
        protocol = data.get("protocol")
        wanted = (
            protocol.get("canary") is True
            if isinstance(protocol, dict)
            else getattr(protocol, "canary", False) is True
        )
        if not wanted or not data["engines"]:
            return data
        return {**data, "engines": with_twin(_expand_series(data["engines"]))}

    @model_validator(mode="after")
    def _consistent(self) -> Spec:
        known = {LOCAL_HOST, *(h.name for h in self.hosts)}
        for index, placement in enumerate(self.placements):
            if placement.server not in known:
                raise ValueError(
                    f"placements[{index}].server: unknown host {placement.server!r} "
                    f"(known: {', '.join(sorted(known))})"
                )
        pairs = [(p.server, p.client) for p in self.placements]
        if len(set(pairs)) != len(pairs):
            raise ValueError("placements: each server/client pair may be listed once")
        for label, items in (
            ("engines", self.engines),
            ("tiers", self.tiers),
            ("hosts", self.hosts),
            ("workloads", self.workloads),
        ):
            names = [item.name for item in items]
            duplicates = sorted({n for n in names if names.count(n) > 1})
            if duplicates:
                raise ValueError(f"{label}: duplicate name {duplicates[0]!r}")
        if (canary := self.distribute.parsed_canary) is not None:
            _check_canary(self, canary)
        for tier in self.tier_list:
            intent = self.resolve(tier)
            if intent.io_capacity_max < intent.io_capacity:
                raise ValueError(
                    f"tier {tier.name!r}: io_capacity_max ({intent.io_capacity_max}) "
                    f"must be at least io_capacity ({intent.io_capacity})"
                )
        return self

    @property
    def tier_list(self) -> list[TierSpec]:
        """The tiers to run; without any, a single tier named after the buffer pool size."""
        if self.tiers:
            return list(self.tiers)
        pool = self.config.buffer_pool or DEFAULT_INTENT.buffer_pool
        assert pool is not None
        return [TierSpec(name=format_size(pool))]

    def host(self, name: str) -> HostSpec:
        return next(h for h in self.hosts if h.name == name)

    def engine(self, name: str) -> EngineSpec:
        return next(e for e in self.engines if e.name == name)

    def tier(self, name: str) -> TierSpec:
        return next(t for t in self.tier_list if t.name == name)

    def workload(self, name: str) -> WorkloadSpec:
        return next(w for w in self.workloads if w.name == name)

    def resolve(self, tier: TierSpec) -> ResolvedIntent:
        layers = [DEFAULT_INTENT, self.config, tier]
        fields: dict[str, Any] = {}
        extra: dict[str, dict[str, Scalar]] = {}
        for layer in layers:
            for key, value in layer.model_dump(exclude={"name", "extra"}).items():
                if value is not None:
                    fields[key] = getattr(layer, key)
            for family, options in layer.extra.items():
                extra.setdefault(family, {}).update(options)
        if "max_connections" not in fields:
            busiest = max(max(self.protocol.threads), self.protocol.warmup_threads)
            fields["max_connections"] = max(151, busiest + 32)
        fields.setdefault("flush_method", None)
        return ResolvedIntent(**fields, extra=extra)

    def digest(self) -> str:
        """What is measured: everything but how it is spread over machines."""
        # Keys added since digests were first taken leave a spec's digest as it was until used.
        defaults: dict[str, Any] = {
            "rates": [],
            "closed_loop": True,
            # How long to measure, not what is measured.
            "target_ci_pct": self.protocol.target_ci_pct,
            "budget_minutes": self.protocol.budget_minutes,
            "budget_seconds": self.protocol.budget_seconds,
            "precision_measure": self.protocol.precision_measure,
            "isolation": False,
            "stop": "fixed",
        }
        protocol = {k for k, v in defaults.items() if getattr(self.protocol, k) == v}
        if self.protocol.order != "sliced":
            protocol.add("slice_seconds")  # no slots to size
        if self.protocol.stop == "fixed":
            protocol |= {"stop_target_pct", "stop_min_seconds"}
        workloads = {i: {"rates"} for i, w in enumerate(self.workloads) if w.rates is None}
        # A Debian source of the installed package, as before suites could be named.
        sources = [e.source.model_dump() if e.source else {} for e in self.engines]
        suite_keys = {"source": {"suite", "version", "sha256", "also"}}
        engines: dict[int, Any] = {
            i: suite_keys for i, d in enumerate(sources) if d.get("suite", 0) is None
        }
        for i, engine in enumerate(self.engines):
            if engine.telemetry is None:
                engines[i] = {**engines.get(i, {}), "telemetry": True}
        data = self.model_dump(
            mode="json",
            exclude={
                "distribute": True, "compare": True, "protocol": protocol, "workloads": workloads,
                "engines": engines,
            },
        )  # fmt: skip
        return _digest(data)


def _check_canary(spec: Spec, canary: ShardCanary) -> None:
    where = "distribute.canary"
    if canary.engine not in {e.name for e in spec.engines}:
        raise ValueError(f"{where}: engine {canary.engine!r} is not one of the spec's engines")
    if canary.tier is not None and canary.tier not in {t.name for t in spec.tier_list}:
        raise ValueError(f"{where}: tier {canary.tier!r} is not one of the spec's tiers")
    if canary.workload not in {w.name for w in spec.workloads}:
        raise ValueError(f"{where}: workload {canary.workload!r} is not one of the spec's")


def _digest(data: Any) -> str:
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _engine_definition(engine: EngineSpec) -> dict[str, Any]:
    # Unset, telemetry is the run's choice and not part of what a cell measures.
    unset = {"telemetry"} if engine.telemetry is None else set()
    return engine.model_dump(mode="json", exclude=unset)


def cell_definition_digest(
    spec: Spec, engine: str, tier: str, workload: str, kind_facts: dict[str, Any] | None = None
) -> str:
    """What a cell's numbers depend on; a changed digest means the stored cell is not
    comparable. A workload of a kind other than sbtest adds its kind's facts (its dataset,
    its script's sha256, ...)."""
    protocol = spec.protocol.model_dump(
        include={
            "warmup_ro_seconds",
            "warmup_rw_seconds",
            "warmup_threads",
            "measure_seconds",
            "report_interval",
        }
    )
    if spec.protocol.isolation:  # absent when off: results from before it keep their digest
        protocol["isolation"] = True
    if spec.protocol.stop == "adaptive":  # likewise: fixed cells keep theirs
        protocol |= spec.protocol.model_dump(
            include={"stop", "stop_target_pct", "stop_min_seconds"}
        )
    resolved = spec.resolve(spec.tier(tier))
    chosen = spec.workload(workload)
    # exclude_none: keys added in later versions leave older results' digests as they were.
    definition: dict[str, Any] = {
        "engine": _engine_definition(spec.engine(engine)),
        "intent": {**resolved.__dict__},
        "dataset": spec.dataset.model_dump(exclude_none=True),
        # sbtest, the default kind, unsaid: cells from before kinds keep their digest.
        "workload": chosen.model_dump(mode="json", exclude_none=True),
        "protocol": protocol,
    }
    if chosen.script is not None and chosen.script.is_file():
        # An edited script measures something else.
        definition["script_sha256"] = hashlib.sha256(chosen.script.read_bytes()).hexdigest()
    if kind_facts:
        definition["kind_facts"] = kind_facts
    return _digest(definition)


# --- loading ---------------------------------------------------------------------------------


# The largest example is 3 KB: a spec hundreds of times that is no spec, and parsing one of
# 64 MB of unknown keys took 47 s and 4 GB before it was refused. Bytes, as the file holds
# them: a character may take four.
MAX_SPEC_BYTES = 2**20


def _within_limit(size: int, origin: str) -> None:
    if size > MAX_SPEC_BYTES:
        raise SpecError(f"{origin}: over {MAX_SPEC_BYTES:,} bytes (1 MiB), the most a spec may be")


def parse_spec(text: str, origin: str, base: Path | None = None) -> Spec:
    _within_limit(len(text.encode("utf-8", "surrogatepass")), origin)
    try:
        data = load_toml(text)
    except TooDeep as exc:
        raise SpecError(f"{origin}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{origin}: not valid TOML: {exc}") from None
    return _validated(data, origin, base)


# Each registered workload kind's check of a workload in its spec, by kind (workloads/kinds.py
# adds them as it adds the kinds' names to KINDS): every command that reads a spec, `plan`
# as much as `run`, refuses what the kind would not run.
KIND_CHECKS: dict[str, Callable[[Spec, WorkloadSpec], str | None]] = {}


def _validated(data: dict[str, Any], origin: str, base: Path | None) -> Spec:
    try:
        spec = Spec.model_validate(data, context={"base": base})
    except ValidationError as exc:
        errors = exc.errors()
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise SpecError(f"{origin}: {describe(errors[0])}{more}") from None
    for index, workload in enumerate(spec.workloads):
        check = KIND_CHECKS.get(workload.kind)
        if check is not None and (problem := check(spec, workload)):
            raise SpecError(f"{origin}: workloads[{index}] ({workload.name}): {problem}")
    return spec


def revised_spec(spec: Spec, origin: str, **sections: dict[str, Any]) -> Spec:
    """The spec with keys of its sections replaced (by command-line options), checked as a
    spec file is; keys left unset stay so, that defaults are told from choices."""
    data = spec.model_dump(exclude_unset=True)
    for section, keys in sections.items():
        data[section] = {**data.get(section, {}), **keys}
    return _validated(data, origin, None)


def derived_spec(data: dict[str, Any], origin: str) -> tuple[Spec, str]:
    """A spec an experiment derives from another's `model_dump(mode="json")` (its paths
    already absolute), validated as a spec file is, with the text its run records."""
    return _validated(data, origin, None), tomli_w.dumps(data)


def load_spec(path: Path) -> Spec:
    try:
        with path.open("rb") as file:
            # One past the limit: parse_spec refuses a huge file (or /dev/zero) unread.
            data = file.read(MAX_SPEC_BYTES + 1)
        _within_limit(len(data), str(path))
        # Line ends of any system, as a file opened as text reads them.
        text = data.decode().replace("\r\n", "\n").replace("\r", "\n")
    except FileNotFoundError:
        raise SpecError(f"{path}: no such spec file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot read the spec: {exc}") from None
    return parse_spec(text, str(path), path.resolve().parent)
