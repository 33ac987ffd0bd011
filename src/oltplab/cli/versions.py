"""Commands along a series: `history` (one engine over many results directories),
`bisect` (which release changed it), `capacity`, `gate` (did a candidate regress) and
`site` (a static site over many runs)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from oltplab.analysis.comparability import alike_notes, uncompared, unlike
from oltplab.base.asking import MARGIN, RESOLUTION
from oltplab.base.errors import EXIT_UNDECIDED, OltplabError
from oltplab.base.given import margin_pct as given_margin
from oltplab.base.given import measure_of, parse_duration, parse_percent
from oltplab.base.telling import Told
from oltplab.base.wording import report_hint
from oltplab.cli.app import (
    AllowMismatchOption,
    MeasureOption,
    console,
    errors,
    flag,
    tell,
)
from oltplab.cli.options import bound
from oltplab.cli.vocabulary import margin_option, resolution_option
from oltplab.store.directory import GATE_MD, GATE_XML, STEPS, ResultsDir


@dataclass(frozen=True)
class HistoryOptions:
    results: Annotated[
        list[Path],
        typer.Argument(metavar="RESULTS", help="Results directories of the same engine over time."),
    ]
    engine: Annotated[str, typer.Option(help="The engine to follow.")]
    measure: MeasureOption = "tps"


@bound(HistoryOptions)
def history(given: HistoryOptions) -> None:
    """Change points in one engine's results over time (nightly runs, say): the results
    directories in the order they ran, each a point, its repetitions its values."""
    from oltplab.analysis.changes import history_changes
    from oltplab.report.format import with_interval

    engine = given.engine
    ordered, changes = history_changes(given.results, engine, measure_of(given.measure))
    # A change between two that were not measured alike may be the setup's, not the engine's.
    tell(Told(tuple(alike_notes(unlike(ordered, refuse=False)))))
    console.print(
        f"{engine} in {len(ordered)} results directories, oldest first: "
        + ", ".join(str(p) for p in ordered),
        highlight=False,
        soft_wrap=True,
    )
    if not changes:
        console.print("no change point (E-Divisive means, Hunter's t-test, p below 0.001)")
    else:
        table = Table(title=f"Where {engine} changed")
        for column in ("scenario", "tier", "threads", "last good", "first changed", "size"):
            table.add_column(column, overflow="fold")
        for c in changes:
            table.add_row(
                c.scenario, c.tier, str(c.threads), c.last_good, c.first_changed,
                with_interval(c.size),
            )  # fmt: skip
        console.print(table)
    console.print(f"Next: {report_hint(ordered)}", highlight=False, soft_wrap=True)


@dataclass(frozen=True)
class BisectOptions:
    good: Annotated[str, typer.Option(help="A release that is as it should be.")]
    bad: Annotated[str, typer.Option(help="A later release that changed.")]
    spec_path: Annotated[
        Path | None,
        typer.Option(
            "--spec",
            help="Releases in order as its engines (your own tarballs or basedirs, say), and "
            "the dataset and protocol to measure with; without one, the catalog's releases "
            "between --good and --bad, on a small dataset.",
        ),
    ] = None
    cell: Annotated[
        str | None,
        typer.Option(help='The cell to follow: "[SCENARIO] TIER WORKLOAD <N>t".'),
    ] = None
    margin: Annotated[
        str | None,
        margin_option(
            "a release within ±PCT of the other is the same; default: margin_pct of the "
            "spec's compare section, 5."
        ),
    ] = None
    results: Annotated[
        Path | None, typer.Option("--results", "-r", help="Default: runs/bisect-GOOD-BAD.")
    ] = None
    max_repetitions: Annotated[
        int,
        typer.Option(
            min=3, max=100, help="Rounds per step at most (3 at least), before it is undecided."
        ),
    ] = 20
    budget: Annotated[
        str,
        typer.Option(
            metavar="TIME",
            help="Add no round that would end the bisection after this much time (90s, 30m, "
            "2h); undecided ends then say the rounds and the budget that would decide.",
        ),
    ] = "30m"
    explain: Annotated[
        bool, flag(help="Profile the two releases around the change and explain it.")
    ] = True
    measure: MeasureOption = "tps"


@bound(BisectOptions)
def bisect(given: BisectOptions) -> None:
    """Which release first changed a cell: the releases between --good and --bad bisected,
    each step measured in paired rounds as a precision search measures them (sliced and
    isolated unless the spec names another order) until its interval decides or the budget
    would be spent; then what differs
    between the last good and the first changed release (settings, per-transaction costs, an
    on-CPU profile drawn as a differential flame graph). Exits 5 when the two ends cannot
    be told apart nor called the same within its repetitions."""
    from oltplab.cli.display import display_for
    from oltplab.experiments.bisect import (
        BisectQuestion,
        bisect_and_explain,
        bisect_subject,
        spread_allowed,
    )
    from oltplab.experiments.session_spread import spread_here

    subject = bisect_subject(given.good, given.bad, given.spec_path, given.cell)
    folder = given.results or Path("runs") / f"bisect-{given.good}-{given.bad}"
    margin_pct = given_margin(given.margin, subject.spec.compare.margin_pct)
    budget_seconds = parse_duration(given.budget, "--budget")
    spread = spread_here()
    console.print(spread_allowed(spread), highlight=False, soft_wrap=True)
    question = BisectQuestion(
        subject.releases, subject.cell, margin_pct, given.max_repetitions,
        measure_of(given.measure), budget_seconds, spread,
    )  # fmt: skip
    done = bisect_and_explain(
        subject.spec, question, folder, display_for(console), explain=given.explain
    )
    beside = (
        f" (allowing for a between-session spread of {spread.spread_pct:.2f}%)" if spread else ""
    )
    console.print(f"verdict: {done.found.verdict}{beside}", highlight=False)
    graph = f"\n{done.flamegraph}" if done.flamegraph else ""
    console.print(f"{done.report}{graph}", highlight=False, soft_wrap=True)
    console.print(f"Next: read {done.report}; every step's results are in {folder / STEPS}")
    if not done.found.decided:
        raise typer.Exit(EXIT_UNDECIDED)


@dataclass(frozen=True)
class CapacityOptions:
    spec_path: Annotated[Path, typer.Argument(help="The spec file (TOML).", metavar="SPEC")]
    slo: Annotated[
        str, typer.Option(help='The objective, e.g. "p99<10ms" (a percentile under a limit).')
    ]
    results: Annotated[
        Path, typer.Option("--results", "-r", help="Results directory for every probe.")
    ]
    start: Annotated[
        int, typer.Option(min=1, max=10_000_000, help="The first rate offered (tps).")
    ] = 100
    resolution: Annotated[
        str, resolution_option("bisect until the bracket is within PCT (0.5% to 50%).")
    ] = "5%"
    max_repetitions: Annotated[
        int,
        typer.Option(min=1, max=100, help="Runs at one rate at most before its point decides."),
    ] = 3


@bound(CapacityOptions)
def capacity(given: CapacityOptions) -> None:
    """The highest rate each engine and tier sustains under a latency objective: open-loop
    probes, bracketing then bisecting the rate, repeated at the boundary until the verdict
    is clear; ranked, with the closed-loop peak beside each."""
    from oltplab.analysis.capacity import Objective
    from oltplab.cli.display import display_for
    from oltplab.experiments.slo_probes import capacities
    from oltplab.spec import load_spec

    objective = Objective.parse(given.slo)
    bracket_pct = parse_percent(given.resolution, RESOLUTION)
    if not 0.5 <= bracket_pct <= 50:
        raise OltplabError(f"{RESOLUTION} {given.resolution}: expected 0.5% to 50%, e.g. 5%")
    found = capacities(
        load_spec(given.spec_path), objective, given.results.resolve(), display_for(console),
        start=given.start, precision=bracket_pct / 100, max_repetitions=given.max_repetitions,
    )  # fmt: skip
    table = Table(title=f"Capacity at {objective}")
    for column in ("engine", "tier", "sustains", "closed-loop peak", "of the peak"):
        table.add_column(column, overflow="fold")
    for one in found:
        peak, share = one.closed_peak, one.share_of_peak
        table.add_row(one.engine, one.tier, one.text(), "-" if peak is None else f"{peak:,.0f} tps",
                      "-" if share is None else f"{share:.0%}")  # fmt: skip
    console.print(table)
    for one in found:
        if one.sustained:
            console.print(one.sustains(), highlight=False)
    console.print(
        f"{ResultsDir(given.results).capacity_json}\nNext: oltplab report {given.results} "
        "(latency against offered load, every probe)",
        highlight=False,
    )


@dataclass(frozen=True)
class GateOptions:
    baseline: Annotated[
        Path, typer.Argument(metavar="BASELINE", help="The results directory to hold to.")
    ]
    candidate: Annotated[
        Path, typer.Argument(metavar="CANDIDATE", help="The results directory to judge.")
    ]
    margin: Annotated[
        str, margin_option("the largest regression allowed (TPS lower, a cost higher).")
    ] = "3%"
    allow_mismatch: AllowMismatchOption = False
    measure: MeasureOption = "tps"
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Where gate.md and gate.xml (JUnit) go (default: CANDIDATE)."
        ),
    ] = None


@bound(GateOptions)
def gate(given: GateOptions) -> None:
    """A regression gate for CI: exit 0 when no point regressed beyond --margin, 1 when one
    did (named), 5 when the intervals cannot tell (undecided), 2 for an input that cannot be
    judged (with an error line). Prints a Markdown summary (append it to
    $GITHUB_STEP_SUMMARY) and writes JUnit XML, one test case per point."""
    from oltplab.analysis.gate import gate as judge_gate
    from oltplab.report.gate_summary import gate_folder, write_gate

    allowed, judged = parse_percent(given.margin, MARGIN), measure_of(given.measure)
    both = [given.baseline, given.candidate]
    folder = gate_folder(given.baseline, given.candidate, given.output)
    unalike = unlike(both, refuse=not given.allow_mismatch)
    found = judge_gate(given.baseline, given.candidate, allowed, judged)
    unknown = uncompared(both)
    tell(Told(tuple(alike_notes(unalike, unknown))))
    summary = write_gate(folder, found, given.baseline, given.candidate, unalike, unknown)
    print(summary, end="")
    # Beside the summary, not in it: a CI job appends stdout to its page.
    errors.print(f"gate: {found.describe()}", highlight=False, markup=False, soft_wrap=True)
    errors.print(
        f"Summary: {folder / GATE_MD}; JUnit XML: {folder / GATE_XML}. Next: {report_hint(both)}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    raise typer.Exit(int(found.outcome))


@dataclass(frozen=True)
class SiteOptions:
    results: Annotated[
        list[Path],
        typer.Argument(
            metavar="RESULTS",
            help="Results directories (nightly runs, shards, imports), in any order.",
        ),
    ]
    output: Annotated[Path, typer.Option("--output", "-o", help="The site's folder.")]


@bound(SiteOptions)
def site(given: SiteOptions) -> None:
    """One static, offline site over many results directories: an index of the runs with
    their provenance and calibration, each run's report, and one page per point with its
    figure in every run, the interval of each, the change points along them, and links to
    the raw files. Open OUTPUT/index.html; it needs no server and no network."""
    from oltplab.experiments.calibrate import floor_for
    from oltplab.report.site import build_site

    with console.status(f"building the site over {len(given.results)} results directories"):
        built = build_site(given.results, given.output, floor_for)
    console.print(
        f"{built.index}: {built.runs} run(s), {built.histories} point(s) over them",
        highlight=False,
    )
    console.print(
        f"Next: open {built.index} in a browser (offline), or publish {given.output} as it is",
        highlight=False,
    )
