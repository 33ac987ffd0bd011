"""Run again what a results directory's run.json describes, into another: what it will use
is said first (the run.json may be someone else's), what differs from the original run
that could move the numbers is written into the new run.json, and then whether the repeat
reproduced it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oltplab.analysis.reproduce import Reproduction, reproduction
from oltplab.base.asking import argument, margin_option, option, results_option
from oltplab.base.errors import OltplabError
from oltplab.base.given import margin_pct
from oltplab.base.telling import Note, Told
from oltplab.engines.supplier import source_of
from oltplab.measure.request import Display, RunRequest
from oltplab.measure.runner import RunOutcome, run
from oltplab.spec import parse_spec
from oltplab.spec.server_options import extra_option_lines
from oltplab.store.directory import ResultsDir
from oltplab.store.lock import ResultsLock
from oltplab.store.provenance import RunRecord, differences, read_run_json
from oltplab.telemetry import registry


@dataclass(frozen=True, kw_only=True)
class RerunAsked:
    original: Path = argument(
        "A results directory written by `oltplab run` (has run.json).", "ORIGINAL"
    )
    results: Path = results_option()
    yes: bool = option(
        False, "Start without asking (what it touches is still shown).", "--yes", "-y"
    )
    margin: str | None = margin_option(
        "the repeat counts as the original's within ±PCT (two one-sided tests on the "
        "90% interval); default: margin_pct of the spec's compare section, 5."
    )

    def planned(self) -> RerunPlanned:
        """The run ORIGINAL's run.json describes, into --results, its spec read from there."""
        original, results = self.original, self.results
        recorded = read_run_json(original)
        if results.resolve() == original.resolve():
            raise OltplabError(
                f"--results {results}: must differ from {original} (the run to repeat)"
            )
        spec_info = recorded["spec"]
        base = Path(spec_info["base"])
        spec = parse_spec(spec_info["text"], f"{ResultsDir(original).run_json} (spec.text)", base)
        request = RunRequest(
            spec,
            spec_info["text"],
            f"rerun of {original}",
            results,
            telemetry=registry.recorded(recorded.get("telemetry", True)),
            spec_base=base,
            rerun_of={"results": str(original.resolve()), "spec_digest": spec_info.get("digest")},
        )
        margin = margin_pct(self.margin, spec.compare.margin_pct)
        return RerunPlanned(original, recorded, request, margin)


@dataclass(frozen=True)
class RerunPlanned:
    original: Path
    recorded: dict[str, Any]  # the original's run.json, which may be someone else's
    request: RunRequest
    margin_pct: float  # the repeat reproduces the original within it

    def touches(self) -> Told:
        """What the run touches beyond this machine's own engines: binaries fetched or
        taken from paths, hosts reached over SSH, endpoints connected to, Lua scripts run
        (they may do anything sysbench's LuaJIT can), raw server options, and where the
        results go."""
        spec = self.request.spec
        lines = []
        for engine in spec.engines:
            kind, value = next(iter(source_of(engine).items()))
            lines.append(f"engine {engine.name}: {kind} {value}")
        for host in spec.hosts:
            options = " ".join(f"-o {k}={v}" for k, v in host.options.items())
            port = f" -p {host.port}" if host.port else ""
            identity = f" -i {host.identity_file}" if host.identity_file else ""
            lines.append(
                f"host {host.name}: ssh{port}{identity} {options} {host.ssh}, "
                f"files under {host.workdir}".replace("  ", " ")
            )
        for workload in spec.workloads:
            if workload.script is not None:
                lines.append(f"workload {workload.name}: runs the Lua script {workload.script}")
        lines += [f"server options from {line}" for line in extra_option_lines(spec.model_dump())]
        lines.append(f"results into {self.request.results.resolve()}")
        return Told((f"{ResultsDir(self.original).run_json} will use:", *(f"  {x}" for x in lines)))


@dataclass(frozen=True)
class Rerun:
    planned: RerunPlanned
    outcome: RunOutcome
    record: RunRecord  # the repeat's run.json
    differences: list[str]

    def judged(self) -> Reproduction:
        """Whether the repeat reproduced the original within the margin, kept in its
        run.json."""
        margin = self.planned.margin_pct
        found = reproduction(self.planned.original, self.planned.request.results, margin)
        self.record.data["reproduction"] = {
            "margin_pct": margin,
            "verdict": found.verdict,
            "points": [
                {"point": list(point), "verdict": judged.describe("reproduced")}
                for point, judged in found.points
            ],
        }
        self.record.save()
        return found

    def told(self) -> Told:
        """What differs from the original run; then, unless it was interrupted, whether it
        reproduced it."""
        differ = tuple(Note(f"differs from the original run: {d}") for d in self.differences)
        return Told(differ if self.outcome.interrupted else (*differ, *self.judged().said()))


def run_again(planned: RerunPlanned, display: Display) -> Rerun:
    """The rerun measured, and what differs from the original written into its run.json."""
    outcome = run(planned.request, display)
    results = planned.request.results
    with ResultsLock(results):
        record = RunRecord(results.resolve(), read_run_json(results))
        record.data["differences"] = differences(planned.recorded, record.data)
        record.save()
    return Rerun(planned, outcome, record, record.data["differences"])
