"""Workloads as the runner runs them: each kind's call through the gate scripts here (which
every cell runs), a check of every workload against what the installed sysbench accepts,
made before anything is provisioned, and what a run records of each workload.

What a workload runs and on which data is its kind's (workloads/kinds.py): sbtest's
built-in tests, read/write mixes (the bundled `oltp_read_write_pct.lua`) and the user's own
scripts on sysbench's tables, the TPC-C-like kind, or a plugin kind's own dataset and script.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from oltplab.base.errors import SpecError
from oltplab.plan import Cell
from oltplab.spec import Spec, cell_definition_digest
from oltplab.spec.fields import DEFAULT_KIND, Scalar
from oltplab.store.files import sha256_file
from oltplab.sysbench.driver import (
    Call,
    help_options,
    help_rand_types,
    option_key,
    value_problem,
)
from oltplab.workloads.kinds import kind_of

HELP_TIMEOUT_SECONDS = 60

# Every cell runs its workload through the gate: it counts ignored errors by code and can
# end an adaptive cell early (gate.lua says how).
GATE = Path(__file__).with_name("gate.lua")
WORKLOAD_ENV = "OLTPLAB_WORKLOAD"  # read by workload.lua, for every gate


def gated(
    call: Call,
    spec: Spec,
    seconds: int,
    gate_options: Mapping[str, Scalar],
    gate: Path = GATE,
    rate: int = 0,
) -> Call:
    """A kind's call as the runner runs it: through a gate (with the gate's own options,
    and the environment that names the workload to it), for this long, at the protocol's
    report interval."""
    return replace(
        call,
        test=str(gate),
        env={**call.env, WORKLOAD_ENV: call.test},
        seconds=seconds,
        report_interval=spec.protocol.report_interval,
        options={**call.options, **gate_options},
        rate=rate,
    )


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
        call = kind_of(workload).call(spec, workload, 1)
        check_rand(where, call.rand_type)
        if workload.script is not None and not workload.script.is_file():
            raise SpecError(f"{origin}: {where}: script {workload.script}: no such file")
        test = call.test
        loaded = _help([sysbench, test, "help"])
        if loaded.returncode != 0:
            raise SpecError(
                f"{origin}: {where}: sysbench cannot load {test}: {_fatal(loaded, test)}"
            )
        known = {**known_general, **help_options(loaded.stdout)}
        for key, value in call.options.items():
            kind = known.get(option_key(key))
            if kind is None:
                raise SpecError(
                    f"{origin}: {where}: options.{key}: neither {Path(test).name} nor sysbench "
                    f"has this option (`sysbench {test} help` lists them)"
                )
            if problem := value_problem(value, kind):
                raise SpecError(f"{origin}: {where}: options.{key}: {problem} (got {value!r})")


def workload_facts(spec: Spec) -> dict[str, dict[str, Any]]:
    """What each workload ran, for run.json and the report: its kind's facts (a test or
    script, mix, distribution, options for sbtest), with a script's sha256."""
    facts = {}
    for position, workload in enumerate(spec.workloads):
        fact = kind_of(workload).facts(spec, workload)
        if "script" in fact:
            fact["script_sha256"] = sha256_file(Path(fact["script"]))
        if workload.kind != DEFAULT_KIND:  # sbtest's facts stay as they were before kinds
            fact.update(kind=workload.kind, dataset=kind_of(workload).dataset_key(spec))
        fact["position"] = position  # run.json sorts its keys; reports keep the spec's order
        facts[workload.name] = fact
    return facts


def _definition(fact: dict[str, Any]) -> dict[str, Any]:
    """A kind's facts as its cells' definitions hold them: its script by file name (its
    content is in script_sha256), so that a checkout elsewhere measures the same cells."""
    kept = {key: value for key, value in fact.items() if key != "position"}
    if "script" in kept:
        kept["script"] = Path(kept["script"]).name
    return kept


def cell_definitions(spec: Spec, cells: Iterable[Cell]) -> dict[Cell, str]:
    """Each cell's definition digest; a workload of a kind other than sbtest adds its kind's
    facts (what its cells measure, without its place in the spec)."""
    facts = workload_facts(spec)
    kinds = {name: _definition(fact) for name, fact in facts.items() if "kind" in fact}
    return {
        cell: cell_definition_digest(
            spec, cell.engine, cell.tier, cell.workload, kinds.get(cell.workload)
        )
        for cell in cells
    }
