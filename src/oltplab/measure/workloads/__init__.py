"""Workloads: what sysbench runs for each one, and a check of every workload against what
the installed sysbench accepts, made before anything is provisioned.

A workload is a built-in sysbench test, a read/write mix (the bundled
`oltp_read_write_pct.lua`), or the user's own Lua script. All of them run on the sbtest
tables that sysbench's oltp_common prepares.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from oltplab.base.errors import SpecError
from oltplab.spec import Spec, WorkloadSpec
from oltplab.store.files import sha256_file
from oltplab.sysbench.driver import help_options, help_rand_types, option_key, value_problem

MIX_SCRIPT = Path(__file__).with_name("oltp_read_write_pct.lua")
HELP_TIMEOUT_SECONDS = 60


def script_file(workload: WorkloadSpec) -> Path | None:
    """The Lua file the workload runs, when it is not one of sysbench's own tests."""
    if workload.script is not None:
        return workload.script
    return MIX_SCRIPT if workload.is_mix else None


def sysbench_test(workload: WorkloadSpec) -> str:
    """The workload as sysbench names it: a built-in test's name or a script's path."""
    script = script_file(workload)
    return str(script) if script else (workload.test or workload.name)


# Every cell runs its workload through the gate: it counts ignored errors by code and can
# end an adaptive cell early (gate.lua says how).
GATE = Path(__file__).with_name("gate.lua")
WORKLOAD_ENV = "OLTPLAB_WORKLOAD"  # read by workload.lua, for every gate


def gated(workload: WorkloadSpec) -> tuple[str, dict[str, str]]:
    """What sysbench is told to run for a workload (the gate) and the environment that
    names the workload to it."""
    return str(GATE), {WORKLOAD_ENV: sysbench_test(workload)}


def distribution(spec: Spec, workload: WorkloadSpec) -> tuple[str, float | None]:
    """How rows are picked: the workload's own rand_type, else the dataset's; the Pareto
    parameter only with the Pareto distribution."""
    rand_type = workload.rand_type or spec.dataset.rand_type
    pareto_h = workload.rand_pareto_h or spec.dataset.rand_pareto_h
    return rand_type, pareto_h if rand_type == "pareto" else None


def _help(command: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            command, capture_output=True, text=True, timeout=HELP_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(
            command, 1, "", f"FATAL: no answer within {HELP_TIMEOUT_SECONDS} s"
        )


def _fatal(result: subprocess.CompletedProcess[str], test: str) -> str:
    """sysbench's own complaint; Lua's "<shortened path>:5: ..." said as "line 5: ..."."""
    lines = [line.strip() for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    said = next((line for line in lines if line.startswith("FATAL")), lines[-1] if lines else "")
    said = said.removeprefix("FATAL:").strip()
    said = re.sub(rf"^\S*{re.escape(Path(test).name)}:(\d+):\s*", r"line \1: ", said)
    return said or f"exit code {result.returncode}"


def check_workloads(spec: Spec, sysbench: str, origin: str) -> None:
    """Every workload's script loads, its options are ones sysbench knows with values of the
    right kind, and its distribution exists in this sysbench; else a one-line SpecError."""
    general = _help([sysbench, "--help"])
    known_general = help_options(general.stdout)
    rand_types = help_rand_types(general.stdout)

    def check_rand(where: str, rand_type: str) -> None:
        if rand_types and rand_type not in rand_types:
            raise SpecError(
                f"{origin}: {where}: rand_type {rand_type!r} is not in this sysbench "
                f"(it has {', '.join(rand_types)})"
            )

    check_rand("dataset", spec.dataset.rand_type)
    for index, workload in enumerate(spec.workloads):
        where = f"workloads[{index}] ({workload.name})"
        check_rand(where, distribution(spec, workload)[0])
        if workload.script is not None and not workload.script.is_file():
            raise SpecError(f"{origin}: {where}: script {workload.script}: no such file")
        test = sysbench_test(workload)
        loaded = _help([sysbench, test, "help"])
        if loaded.returncode != 0:
            raise SpecError(
                f"{origin}: {where}: sysbench cannot load {test}: {_fatal(loaded, test)}"
            )
        known = {**known_general, **help_options(loaded.stdout)}
        for key, value in workload.run_options().items():
            kind = known.get(option_key(key))
            if kind is None:
                raise SpecError(
                    f"{origin}: {where}: options.{key}: neither {Path(test).name} nor sysbench "
                    f"has this option (`sysbench {test} help` lists them)"
                )
            if problem := value_problem(value, kind):
                raise SpecError(f"{origin}: {where}: options.{key}: {problem} (got {value!r})")


def workload_facts(spec: Spec) -> dict[str, dict[str, Any]]:
    """What each workload ran, for run.json and the report: its test or script (with the
    script's sha256), mix, distribution and options."""
    facts = {}
    for position, workload in enumerate(spec.workloads):
        rand_type, pareto_h = distribution(spec, workload)
        fact: dict[str, Any] = {"test": workload.test or workload.name}
        script = script_file(workload)
        if script is not None:
            fact = {"script": str(script), "script_sha256": sha256_file(script)}
        fact["position"] = position  # run.json sorts its keys; reports keep the spec's order
        if workload.is_mix:
            fact.update(read_percent=workload.read_percent, write_percent=workload.write_percent)
        fact.update(rand_type=rand_type, read_only=workload.reads_only)
        if pareto_h is not None:
            fact["rand_pareto_h"] = pareto_h
        if workload.options:
            fact["options"] = dict(workload.options)
        facts[workload.name] = fact
    return facts
