"""A spec's workloads: a built-in sysbench test, a read/write mix or a script of the user's
on sysbench's sbtest tables, or a workload of another registered kind (workloads/kinds.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    field_validator,
    model_serializer,
    model_validator,
)

from oltplab.spec.fields import (
    DEFAULT_KIND,
    READ_ONLY_TESTS,
    RUNNER_SYSBENCH_OPTIONS,
    SYSBENCH_TESTS,
    UNRECORDED_SYSBENCH_OPTIONS,
    Kind,
    Name,
    PathText,
    Rates,
    Scalar,
    StrictModel,
    printable,
)
from oltplab.spec.sources import beside_spec

# The read/write mixes of the Kubernetes report: each event is a point select or an index
# update, drawn with these odds (percent of reads, percent of writes).
MIX_PRESETS: dict[str, tuple[int, int]] = {
    "read-intensive": (80, 20),
    "balanced": (50, 50),
    "write-intensive": (20, 80),
}
# A TPC-C-like workload's `rates = ["terminals"]`: what the specification's ten terminals a
# warehouse offer with their keying and think times. At its ceiling of 12.86 New-Orders a
# minute per warehouse, New-Orders being 45% of the mix, that is 28.6 transactions a
# minute, 0.48 a second, per warehouse.
TERMINAL_TPS_PER_WAREHOUSE = 0.48
TERMINALS = "terminals"
RandType = Literal["uniform", "gaussian", "special", "pareto", "zipfian"]
Percent = Annotated[int, Field(ge=0, le=100)]


class WorkloadSpec(StrictModel):
    """One workload: a built-in sysbench test, a read/write mix, or the user's own script,
    on sysbench's sbtest tables; or a workload of another registered `kind`, which brings
    its own dataset and script.

    `name` labels the workload in every table and folder; a plain string in the spec names
    a built-in test or a mix preset.
    """

    name: Name
    # What it runs on and how it is loaded (workloads/kinds.py): sbtest, sysbench's tables,
    # for a test, a mix or a script; another kind brings its own dataset and script.
    kind: Kind = DEFAULT_KIND
    test: Literal[SYSBENCH_TESTS] | None = None  # type: ignore[valid-type]
    script: Annotated[PathText, BeforeValidator(beside_spec)] | None = None
    read_percent: Percent | None = None
    write_percent: Percent | None = None
    # For a script, whether it only reads (read-only workloads get no read-write warm-up).
    read_only: StrictBool | None = None
    rand_type: RandType | None = None
    rand_pareto_h: Annotated[float, Field(gt=0, lt=1)] | None = None
    options: dict[str, Scalar] = {}
    # For a kind with transaction types (tpcc): percent of transactions by type, adding up
    # to 100; the kind says which names it knows (workloads/kind.py).
    mix: dict[str, Percent] | None = None
    # Open loop for this workload: rates offered (overrides [protocol] rates).
    rates: Annotated[Rates, Field(min_length=1)] | None = None

    @field_validator("options")
    @classmethod
    def _no_reserved(cls, options: dict[str, Scalar]) -> dict[str, Scalar]:
        for key in options:
            spelled = key.replace("_", "-")
            if not re.match(r"^[a-z][a-z0-9_-]*$", key):
                raise ValueError(f"option {key!r} is not a sysbench option name")
            if spelled in RUNNER_SYSBENCH_OPTIONS:
                raise ValueError(f"option {key!r} is set by oltplab and cannot be overridden")
            if spelled in UNRECORDED_SYSBENCH_OPTIONS:
                raise ValueError(
                    f"option {key!r} changes what a cell measures without its results saying "
                    "so; oltplab does not pass it"
                )
            if spelled in ("read-percent", "write-percent", "rand-type", "rand-pareto-h"):
                raise ValueError(
                    f"option {key!r}: set it as the workload's {key.replace('-', '_')} key"
                )
            if isinstance(value := options[key], str):
                printable(value)
        return options

    @model_validator(mode="after")
    def _one_kind(self) -> WorkloadSpec:
        mix = self.read_percent is not None or self.write_percent is not None
        kinds = [k for k, given in (("test", self.test), ("script", self.script)) if given]
        if mix:
            kinds.append("read_percent/write_percent")
        if len(kinds) > 1:
            raise ValueError(f"workload {self.name!r}: give only one of {' or '.join(kinds)}")
        if self.mix is not None and sum(self.mix.values()) != 100:
            shares = ", ".join(f"{name} = {share}" for name, share in self.mix.items())
            raise ValueError(
                f"workload {self.name!r}: mix must add up to 100 percent (got "
                f"{sum(self.mix.values())}: {shares})"
            )
        if self.kind != DEFAULT_KIND:
            if kinds or self.read_only is not None:
                raise ValueError(
                    f"workload {self.name!r}: test, script, read_percent, write_percent and "
                    f"read_only are for kind {DEFAULT_KIND!r}; kind {self.kind!r} runs its own"
                )
            return self
        if self.mix is not None:
            raise ValueError(
                f"workload {self.name!r}: mix is for kinds with transaction types (such as "
                "tpcc); an sbtest read/write mix takes read_percent and write_percent"
            )
        if not kinds and self.name not in SYSBENCH_TESTS:
            raise ValueError(
                f"workload {self.name!r}: not a sysbench test ({', '.join(SYSBENCH_TESTS)}) nor "
                f"a mix ({', '.join(MIX_PRESETS)}); or give a table with test, script, or "
                "read_percent and write_percent"
            )
        if mix and (self.read_percent or 0) + (self.write_percent or 0) != 100:
            raise ValueError(
                f"workload {self.name!r}: read_percent and write_percent must add up to 100 "
                f"(got {self.read_percent} and {self.write_percent})"
            )
        if self.read_only is not None and self.script is None:
            raise ValueError(
                f"workload {self.name!r}: read_only is only for scripts (a test or mix says it)"
            )
        if self.rand_pareto_h is not None and self.rand_type not in (None, "pareto"):
            raise ValueError(f"workload {self.name!r}: rand_pareto_h goes with rand_type pareto")
        return self

    @property
    def is_mix(self) -> bool:
        return self.read_percent is not None

    @property
    def reads_only(self) -> bool:
        """No writes: such a workload gets no read-write warm-up and an RO file name."""
        if self.script is not None:
            return bool(self.read_only)
        if self.is_mix:
            return self.write_percent == 0
        return (self.test or self.name) in READ_ONLY_TESTS

    @model_serializer(mode="wrap")
    def _kind_when_chosen(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # sbtest, the default kind, is left unsaid: a spec written out, or its digests, are
        # what they were before kinds.
        data: dict[str, Any] = handler(self)
        if self.kind == DEFAULT_KIND:
            data.pop("kind", None)
        return data

    def run_options(self) -> dict[str, Scalar]:
        """What sysbench gets on top of the runner's own options."""
        options: dict[str, Scalar] = {}
        if self.is_mix:
            options = {"read-percent": self.read_percent, "write-percent": self.write_percent}  # type: ignore[dict-item]
        return {**options, **self.options}


def paced_as_terminals(data: Any) -> Any:
    """A spec's data with each workload's `"terminals"` rate made the number the TPC-C
    specification's terminals would offer at its warehouses (the workload's
    options.warehouses, else [dataset] warehouses, else one); whole, at least 1."""
    if not isinstance(data, dict) or not isinstance(data.get("workloads"), list):
        return data
    dataset: dict[str, Any] = data["dataset"] if isinstance(data.get("dataset"), dict) else {}
    workloads = []
    for item in data["workloads"]:
        rates = item.get("rates") if isinstance(item, dict) else None
        # Terminals and warehouses are a kind's of its own (sbtest has neither).
        if (
            isinstance(rates, list)
            and TERMINALS in rates
            and item.get("kind", DEFAULT_KIND) != DEFAULT_KIND
        ):
            options: dict[str, Any] = (
                item["options"] if isinstance(item.get("options"), dict) else {}
            )
            warehouses = options.get("warehouses") or dataset.get("warehouses") or 1
            if isinstance(warehouses, int) and not isinstance(warehouses, bool):
                paced = max(1, round(TERMINAL_TPS_PER_WAREHOUSE * warehouses))
                item = {**item, "rates": [paced if r == TERMINALS else r for r in rates]}
        workloads.append(item)
    return {**data, "workloads": workloads}


def workload_from_name(value: Any) -> Any:
    """A string or table in the spec as WorkloadSpec fields: presets filled in, names derived."""
    if isinstance(value, str):
        value = {"name": value}
    if not isinstance(value, dict):
        return value
    value = dict(value)
    name = value.get("name")
    if (
        isinstance(name, str)
        and name in MIX_PRESETS
        and not {"test", "script", "read_percent", "write_percent"} & value.keys()
    ):
        value["read_percent"], value["write_percent"] = MIX_PRESETS[name]
    # Only a number gives the other; anything else is left for validation to refuse.
    if isinstance(value.get("read_percent"), int) and value.get("write_percent") is None:
        value["write_percent"] = 100 - value["read_percent"]
    if isinstance(value.get("write_percent"), int) and value.get("read_percent") is None:
        value["read_percent"] = 100 - value["write_percent"]
    if name is None:
        if value.get("kind", DEFAULT_KIND) != DEFAULT_KIND:
            base = str(value["kind"])
        elif value.get("script"):
            base = Path(str(value["script"])).stem
        elif value.get("test"):
            base = str(value["test"])
        elif "read_percent" in value or "write_percent" in value:
            base = f"mix-{value.get('read_percent')}-{value.get('write_percent')}"
        else:
            return value  # the missing name is reported
        rand = value.get("rand_type")
        value["name"] = f"{base}-{rand}" if rand else base
    return value
