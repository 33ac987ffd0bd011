"""The sbtest kind: sysbench's own tables (`[dataset]` tables x table_size rows, loaded by
oltp_common's `prepare`), on which run sysbench's built-in tests, the read/write mixes (the
bundled `oltp_read_write_pct.lua`) and the user's own scripts. Warmed up read-only, then
read-write unless the workload only reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from oltplab.spec import Spec, WorkloadSpec
from oltplab.spec.fields import DEFAULT_KIND
from oltplab.sysbench.driver import Call
from oltplab.workloads.kind import WorkloadKind

MIX_SCRIPT = Path(__file__).with_name("oltp_read_write_pct.lua")


def script_file(workload: WorkloadSpec) -> Path | None:
    """The Lua file the workload runs, when it is not one of sysbench's own tests."""
    if workload.script is not None:
        return workload.script
    return MIX_SCRIPT if workload.is_mix else None


def sysbench_test(workload: WorkloadSpec) -> str:
    """The workload as sysbench names it: a built-in test's name or a script's path."""
    script = script_file(workload)
    return str(script) if script else (workload.test or workload.name)


def distribution(spec: Spec, workload: WorkloadSpec) -> tuple[str, float | None]:
    """How rows are picked: the workload's own rand_type, else the dataset's; the Pareto
    parameter only with the Pareto distribution."""
    rand_type = workload.rand_type or spec.dataset.rand_type
    pareto_h = workload.rand_pareto_h or spec.dataset.rand_pareto_h
    return rand_type, pareto_h if rand_type == "pareto" else None


class Sbtest(WorkloadKind):
    name: ClassVar[str] = DEFAULT_KIND
    example: ClassVar[str] = '"balanced"'

    def dataset_key(self, spec: Spec) -> str:
        return json.dumps(spec.dataset.model_dump(exclude_none=True), sort_keys=True)

    def dataset_rows(self, spec: Spec) -> int:
        return spec.dataset.tables * spec.dataset.table_size

    def describe_dataset(self, spec: Spec) -> str:
        return f"{spec.dataset.tables} x {spec.dataset.table_size:,} rows"

    def prepare(self, spec: Spec, action: str, cores: int) -> Call:
        return Call(
            "oltp_read_write",
            action,
            threads=max(1, min(spec.dataset.tables, cores)),
            tables=spec.dataset.tables,
            table_size=spec.dataset.table_size,
        )

    def call(self, spec: Spec, workload: WorkloadSpec, threads: int) -> Call:
        rand_type, pareto_h = distribution(spec, workload)
        return Call(
            sysbench_test(workload),
            "run",
            threads,
            tables=spec.dataset.tables,
            table_size=spec.dataset.table_size,
            rand_type=rand_type,
            rand_pareto_h=pareto_h,
            options=workload.run_options(),
        )

    def warm_ups(self, spec: Spec, workload: WorkloadSpec) -> list[tuple[WorkloadSpec, int]]:
        # A warm-up runs with the options the spec gives its test, on the dataset's rows.
        listed = {w.name: w.options for w in spec.workloads}
        phases = [("oltp_read_only", spec.protocol.warmup_ro_seconds)]
        if not workload.reads_only:
            phases.append(("oltp_read_write", spec.protocol.warmup_rw_seconds))
        return [(WorkloadSpec(name=test, options=listed.get(test, {})), s) for test, s in phases]

    def facts(self, spec: Spec, workload: WorkloadSpec) -> dict[str, Any]:
        rand_type, pareto_h = distribution(spec, workload)
        fact: dict[str, Any] = {"test": workload.test or workload.name}
        script = script_file(workload)
        if script is not None:
            fact = {"script": str(script)}
        if workload.is_mix:
            fact.update(read_percent=workload.read_percent, write_percent=workload.write_percent)
        fact.update(rand_type=rand_type, read_only=workload.reads_only)
        if pareto_h is not None:
            fact["rand_pareto_h"] = pareto_h
        if workload.options:
            fact["options"] = dict(workload.options)
        return fact
