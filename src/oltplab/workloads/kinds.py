"""The workload kinds oltplab knows, registered by name. A kind is one module with one
subclass of kind.WorkloadKind and one `register` line: below for the built-in sbtest and
tpcc, or in the module itself for a plugin (cli/plugins.py imports plugins at the command
line's start). Registering it makes its name one a spec's `kind` may give;
tests/support/workload_contract.py is what every registered kind passes.
"""

from __future__ import annotations

from pathlib import Path

from oltplab.base import nofollow
from oltplab.base.errors import SpecError
from oltplab.spec import KIND_CHECKS, Spec, WorkloadSpec
from oltplab.spec.fields import KINDS
from oltplab.sysbench.transactions import KindResults
from oltplab.workloads.kind import WorkloadKind
from oltplab.workloads.sbtest import Sbtest
from oltplab.workloads.tpcc import Tpcc

_KINDS: dict[str, WorkloadKind] = {}


def register(kind: type[WorkloadKind]) -> None:
    """Adds a kind (its name is then one a spec may give, too)."""
    known = _KINDS.get(kind.name)
    if known is not None and type(known) is not kind:
        raise SpecError(
            f"workload kind {kind.name!r} is registered already ({type(known).__module__}); "
            "a plugin's kind needs a name of its own"
        )
    _KINDS[kind.name] = kind()
    KIND_CHECKS[kind.name] = _KINDS[kind.name].check
    if kind.name not in KINDS:
        KINDS.append(kind.name)


def registered() -> list[WorkloadKind]:
    return list(_KINDS.values())


def kind_of(workload: WorkloadSpec) -> WorkloadKind:
    return kind_named(workload.kind)


def kind_results_in(workload: WorkloadSpec, output: Path) -> KindResults | None:
    """What a workload's kind reads in sysbench's output file beyond its summary."""
    try:
        text = nofollow.read_text(output)
    except OSError:
        return None  # sysbench wrote nothing: its failure is the cell's reason
    return kind_of(workload).results(text)


def kind_named(name: str) -> WorkloadKind:
    if name not in _KINDS:
        raise SpecError(f"no workload kind {name!r} (known: {', '.join(_KINDS)})")
    return _KINDS[name]


def kinds_used(spec: Spec) -> list[WorkloadKind]:
    """The kinds of the spec's workloads, each once, in the spec's order: the datasets an
    engine's snapshot holds."""
    return list({w.kind: kind_of(w) for w in spec.workloads}.values())


def precision_measure(spec: Spec) -> str:
    """What a precision search judges on: the spec's measure, else the one every workload's
    kind has (NOPM for the TPC-C-like kind), else TPS."""
    if spec.protocol.precision_measure is not None:
        return spec.protocol.precision_measure
    headlines = {kind_of(workload).headline_measure for workload in spec.workloads}
    return headlines.pop() if len(headlines) == 1 else "tps"


def dataset_key(spec: Spec) -> str:
    """What an engine's snapshot holds: every used kind's dataset key (with sbtest alone,
    the key snapshots had before kinds, so that they stay usable)."""
    return " + ".join(kind.dataset_key(spec) for kind in kinds_used(spec))


register(Sbtest)
register(Tpcc)
