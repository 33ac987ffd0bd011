"""The gate's verdict as the Markdown summary a CI job shows (gate.md and the terminal),
written with its JUnit XML."""

from __future__ import annotations

from pathlib import Path

from oltplab.analysis.comparability import alike_notes, uncompared, unlike
from oltplab.analysis.gate import OUTCOME_WORDS, Gate, GateAsked, GateVerdict, gate, junit_xml
from oltplab.base.asking import MARGIN
from oltplab.base.given import measure_of, parse_percent
from oltplab.base.telling import Note, Told, Verbatim
from oltplab.base.wording import report_hint
from oltplab.report.format import code, table, without_html
from oltplab.store.directory import GATE_MD, GATE_XML, check_results
from oltplab.store.outputs import check_beside, write_beside

KIND = "gate"


def gated(asked: GateAsked) -> Told:
    """The candidate judged against the baseline: the Markdown summary on standard output
    (a CI job appends it to its page), written with its JUnit XML; the verdict and where
    the files are beside it; the verdict as the exit status."""
    allowed, judged = parse_percent(asked.margin, MARGIN), measure_of(asked.measure)
    both = [asked.baseline, asked.candidate]
    folder = gate_folder(asked.baseline, asked.candidate, asked.output)
    unalike = unlike(both, refuse=not asked.allow_mismatch)
    found = gate(asked.baseline, asked.candidate, allowed, judged)
    unknown = uncompared(both)
    summary = write_gate(folder, found, asked.baseline, asked.candidate, unalike, unknown)
    return Told(
        (
            *alike_notes(unalike, unknown),
            Verbatim(summary),
            Note(f"gate: {found.describe()}"),
            Note(
                f"Summary: {folder / GATE_MD}; JUnit XML: {folder / GATE_XML}. "
                f"Next: {report_hint(both)}"
            ),
        ),
        exit_status=int(found.outcome),
    )


def gate_folder(baseline: Path, candidate: Path, output: Path | None) -> Path:
    """Where the gate's files go (--output, else the candidate), checked before anything is
    judged: both results directories readable, and the files free or the gate's own."""
    for results in (baseline, candidate):
        check_results(results)
    folder = output or candidate
    check_beside(folder, KIND, [GATE_MD, GATE_XML])
    return folder


def write_gate(
    folder: Path,
    found: Gate,
    baseline: Path,
    candidate: Path,
    unalike: list[str],
    unknown: list[str],
) -> str:
    """gate.md and gate.xml written into `folder` among its other files; the summary."""
    summary = markdown(found, baseline, candidate, unalike, unknown)
    write_beside(folder, KIND, {GATE_MD: summary, GATE_XML: junit_xml(found, unalike, unknown)})
    return summary


def markdown(
    found: Gate, baseline: Path, candidate: Path, unalike: list[str], unknown: list[str]
) -> str:
    """The summary a CI job shows: the verdict first, then how the two runs were not
    measured alike (when the gate was told to judge anyway) and what of their setups could
    not be compared, then every point, worst first. Names are the report's Markdown: a
    folder in a code span, no HTML or link a name could carry."""
    words = OUTCOME_WORDS[found.outcome]
    lines = [
        f"## oltplab gate: {words}",
        "",
        f"{code(str(candidate))} against {code(str(baseline))}, {found.measure.label}, at most "
        f"{found.max_regression_pct:g}% worse allowed (90% intervals: a point regressed when "
        "all of its interval is beyond that, passed when none is).",
        "",
        f"{len(found.of(GateVerdict.REGRESSED))} regressed, {len(found.of(GateVerdict.UNDECIDED))} "
        f"undecided, {len(found.of(GateVerdict.PASSED))} passed.",
        "",
    ]
    for canary in found.canaries:
        said = canary.describe()
        lines += [f"**{said}**" if canary.unfit else said, ""]
    if unalike:
        lines += ["Judged with --allow-mismatch; the two were not measured alike:", ""]
        lines += [f"- {code(said)}" for said in unalike] + [""]
    if unknown:
        lines += ["Not compared, as not every run recorded it:", ""]
        lines += [f"- {code(said)}" for said in unknown] + [""]
    worst_first = [GateVerdict.REGRESSED, GateVerdict.UNDECIDED, GateVerdict.PASSED]
    ordered = sorted(found.points, key=lambda p: (worst_first.index(p.outcome), p.point))
    lines += table(
        ["point", "change [90% interval]", "verdict"],
        [[p.name, p.comparison.with_interval(), OUTCOME_WORDS[p.outcome]] for p in ordered],
    )
    return "\n".join(without_html(line) for line in lines)
