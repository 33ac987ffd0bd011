"""Run again what a results directory's run.json describes, into another: what differs
from the original run that could move the numbers is written into the new run.json, and
then whether the repeat reproduced it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oltplab.analysis.reproduce import Reproduction, reproduction
from oltplab.base.errors import OltplabError
from oltplab.measure.request import Display, RunRequest
from oltplab.measure.runner import RunOutcome, run
from oltplab.spec import parse_spec
from oltplab.store.directory import ResultsDir
from oltplab.store.lock import ResultsLock
from oltplab.store.provenance import RunRecord, differences, read_run_json
from oltplab.telemetry import registry


@dataclass(frozen=True)
class RerunAsked:
    original: Path
    recorded: dict[str, Any]  # the original's run.json, which may be someone else's
    request: RunRequest


def rerun_of(original: Path, results: Path) -> RerunAsked:
    """The run ORIGINAL's run.json describes, into `results`, its spec read from there."""
    recorded = read_run_json(original)
    if results.resolve() == original.resolve():
        raise OltplabError(f"--results {results}: must differ from {original} (the run to repeat)")
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
    return RerunAsked(original, recorded, request)


@dataclass(frozen=True)
class Rerun:
    asked: RerunAsked
    outcome: RunOutcome
    record: RunRecord  # the repeat's run.json
    differences: list[str]

    def judged(self, margin_pct: float) -> Reproduction:
        """Whether the repeat reproduced the original within the margin, kept in its
        run.json."""
        found = reproduction(self.asked.original, self.asked.request.results, margin_pct)
        self.record.data["reproduction"] = {
            "margin_pct": margin_pct,
            "verdict": found.verdict,
            "points": [
                {"point": list(point), "verdict": judged.describe("reproduced")}
                for point, judged in found.points
            ],
        }
        self.record.save()
        return found


def run_again(asked: RerunAsked, display: Display) -> Rerun:
    """The rerun measured, and what differs from the original written into its run.json."""
    outcome = run(asked.request, display)
    results = asked.request.results
    with ResultsLock(results):
        record = RunRecord(results.resolve(), read_run_json(results))
        record.data["differences"] = differences(asked.recorded, record.data)
        record.save()
    return Rerun(asked, outcome, record, record.data["differences"])
