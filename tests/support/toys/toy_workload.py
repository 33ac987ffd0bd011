"""A toy workload kind, as a plugin adds one: this module and its last line. Its dataset is
one small table of its own, `toy_rows`, loaded and measured by the Lua script beside it
(toy_workload.lua, data of this module); a spec's workload says `kind = "toy"`.

`OLTPLAB_PLUGINS=tests.support.toys.toy_workload oltplab run ...` loads it (cli/plugins.py). It
passes the workload contract (tests/fast/test_workload_kinds.py) and runs a real benchmark
from the command line (tests/engine/test_toy_workload.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from oltplab.spec import Spec, WorkloadSpec
from oltplab.sysbench.driver import Call
from oltplab.workloads.kind import WorkloadKind
from oltplab.workloads.kinds import register

SCRIPT = Path(__file__).with_suffix(".lua")
ROWS = 1000


class ToyWorkload(WorkloadKind):
    name: ClassVar[str] = "toy"
    example: ClassVar[str] = '{name = "toy", kind = "toy"}'

    def dataset_key(self, spec: Spec) -> str:
        return f"toy_rows={ROWS}"

    def dataset_rows(self, spec: Spec) -> int:
        return ROWS

    def describe_dataset(self, spec: Spec) -> str:
        return f"toy_rows, {ROWS:,} rows"

    def prepare(self, spec: Spec, action: str, cores: int) -> Call:
        return Call(str(SCRIPT), action, threads=1, options={"rows": ROWS})

    def call(self, spec: Spec, workload: WorkloadSpec, threads: int) -> Call:
        return Call(str(SCRIPT), "run", threads, options={"rows": ROWS, **workload.options})

    def warm_ups(self, spec: Spec, workload: WorkloadSpec) -> list[tuple[WorkloadSpec, int]]:
        return [(workload, spec.protocol.warmup_rw_seconds)]

    def facts(self, spec: Spec, workload: WorkloadSpec) -> dict[str, Any]:
        return {"script": str(SCRIPT), "rows": ROWS, "read_only": False}


register(ToyWorkload)
