"""A regression gate for CI: each point both runs measured, the candidate against the
baseline, judged against the largest regression allowed.

The comparison is the report's (steady seconds, interval over repetitions where there are
enough, else over one run's seconds), at the 90% confidence of the equivalence test: a
point *regressed* when the whole interval lies beyond -max (TPS lower, or a cost higher,
by more than allowed: one-sided at 5%), *passes* when none of it does, and is *undecided*
when the interval straddles the line. The gate fails when any point regressed, passes when
every point passed, and is undecided otherwise: noise is never a pass nor a failure. A
run's A/A canary that ended DIFFERENT (the host could not tell its margin apart) makes the
gate undecided, whatever the points say.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from xml.etree import ElementTree

from oltplab.analysis.canary_verdicts import Canary, canary_of
from oltplab.analysis.equivalence import TOST_CONFIDENCE
from oltplab.analysis.estimate import Comparison, compare
from oltplab.analysis.points import Point
from oltplab.analysis.reproduce import common_points, points_of
from oltplab.base.asking import (
    allow_mismatch_option,
    argument,
    margin_option,
    measure_option,
    output_option,
)
from oltplab.base.errors import EXIT_REGRESSED, EXIT_UNDECIDED
from oltplab.base.metrics import TPS, Measure


# What `oltplab gate` asks, declared here rather than beside the summary it writes
# (report/gate_summary.py): the report package loads Matplotlib when imported, and a
# command's options are bound as the command line starts.
@dataclass(frozen=True, kw_only=True)
class GateAsked:
    baseline: Path = argument("The results directory to hold to.", "BASELINE")
    candidate: Path = argument("The results directory to judge.", "CANDIDATE")
    margin: str = margin_option("the largest regression allowed (TPS lower, a cost higher).", "3%")
    allow_mismatch: bool = allow_mismatch_option()
    measure: str = measure_option()
    output: Path | None = output_option(
        "Where gate.md and gate.xml (JUnit) go (default: CANDIDATE)."
    )


class GateVerdict(IntEnum):
    """The gate's verdict, as its exit code (the same statuses as every command's)."""

    PASSED = 0
    REGRESSED = EXIT_REGRESSED
    UNDECIDED = EXIT_UNDECIDED


OUTCOME_WORDS = {
    GateVerdict.PASSED: "no regression",
    GateVerdict.REGRESSED: "regression",
    GateVerdict.UNDECIDED: "undecided",
}


@dataclass(frozen=True)
class GatedPoint:
    point: Point
    comparison: Comparison  # candidate against baseline, 90% interval
    outcome: GateVerdict

    @property
    def name(self) -> str:
        scenario, tier, engine, threads = self.point
        return f"{engine} {scenario} {tier} {threads}t"


@dataclass(frozen=True)
class Gate:
    points: list[GatedPoint]
    max_regression_pct: float
    measure: Measure
    canaries: list[Canary] = field(default_factory=list)  # each run's, if it measured one

    @property
    def unfit(self) -> list[Canary]:
        """Canaries that ended DIFFERENT: neither a regression nor a pass can be trusted."""
        return [c for c in self.canaries if c.unfit]

    @property
    def outcome(self) -> GateVerdict:
        if self.unfit:
            return GateVerdict.UNDECIDED
        outcomes = {p.outcome for p in self.points}
        if GateVerdict.REGRESSED in outcomes:
            return GateVerdict.REGRESSED
        return GateVerdict.UNDECIDED if GateVerdict.UNDECIDED in outcomes else GateVerdict.PASSED

    def of(self, outcome: GateVerdict) -> list[GatedPoint]:
        return [p for p in self.points if p.outcome == outcome]

    def describe(self) -> str:
        """The verdict in a few words, naming the points that regressed."""
        regressed = ", ".join(p.name for p in self.of(GateVerdict.REGRESSED))
        return OUTCOME_WORDS[self.outcome] + (f" ({regressed})" if regressed else "")


def judged(
    comparison: Comparison, max_regression_pct: float, higher_is_better: bool
) -> GateVerdict:
    """Where the interval lies against the largest regression allowed."""
    low, high = comparison.low_pct, comparison.high_pct
    if low is None or high is None:
        return GateVerdict.UNDECIDED
    # A regression is a fall in TPS, a rise in a cost: seen as a fall of the "better" side.
    worst, best = (low, high) if higher_is_better else (-high, -low)
    if best <= -max_regression_pct:
        return GateVerdict.REGRESSED
    if worst > -max_regression_pct:
        return GateVerdict.PASSED
    return GateVerdict.UNDECIDED


def gate(
    baseline: Path, candidate: Path, max_regression_pct: float, measure: Measure = TPS
) -> Gate:
    runs = points_of(baseline, measure), points_of(candidate, measure)
    before, after, common = common_points(*runs)
    canaries = [c for c in (canary_of(r, max_regression_pct) for r in runs) if c]
    points = []
    for point in common:
        comparison = compare(
            after[point], before[point], label=str(point), confidence=TOST_CONFIDENCE
        )
        outcome = judged(comparison, max_regression_pct, measure.higher_is_better)
        points.append(GatedPoint(point, comparison, outcome))
    return Gate(points, max_regression_pct, measure, canaries)


def junit_xml(found: Gate, unalike: Sequence[str], unknown: Sequence[str]) -> str:
    """One test case per point: a regression is a failure, an undecided point is skipped
    (with the interval that left it undecided), so CI systems show the gate natively. How
    the runs were not measured alike (judged with --allow-mismatch) and what of their setups
    could not be compared are the suite's properties, named as the notes on stderr are."""
    suite = ElementTree.Element(
        "testsuite",
        name="oltplab gate",
        tests=str(len(found.points)),
        failures=str(len(found.of(GateVerdict.REGRESSED))),
        errors="0",
        skipped=str(len(found.of(GateVerdict.UNDECIDED))),
    )
    notes = [("not alike", n) for n in unalike] + [("not compared", n) for n in unknown]
    if notes:
        properties = ElementTree.SubElement(suite, "properties")
        for name, value in notes:
            ElementTree.SubElement(properties, "property", name=name, value=value)
    for gated in found.points:
        scenario, tier, engine, threads = gated.point
        case = ElementTree.SubElement(
            suite, "testcase", classname=f"{scenario}.{tier}", name=f"{engine} {threads}t"
        )
        said = f"{found.measure.label}: {gated.comparison.with_interval()}"
        if gated.outcome == GateVerdict.REGRESSED:
            failure = ElementTree.SubElement(
                case, "failure", message=f"regressed beyond {found.max_regression_pct:g}%"
            )
            failure.text = said
        elif gated.outcome == GateVerdict.UNDECIDED:
            ElementTree.SubElement(case, "skipped", message=f"undecided: {said}")
        else:
            ElementTree.SubElement(case, "system-out").text = said
    suites = ElementTree.Element("testsuites")
    suites.append(suite)
    ElementTree.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(suites, "unicode")
