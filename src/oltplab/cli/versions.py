"""Commands along a series: `history` (one engine over many results directories),
`bisect` (which release changed it), `capacity`, `gate` (did a candidate regress) and
`site` (a static site over many runs)."""

from __future__ import annotations

from oltplab.analysis.changes import HistoryAsked, SiteAsked, history_followed
from oltplab.analysis.gate import GateAsked
from oltplab.cli.app import console, say, tell
from oltplab.cli.display import display_for
from oltplab.cli.options import bound
from oltplab.experiments.bisect import BisectAsked, bisected
from oltplab.experiments.slo_probes import CapacityAsked, capacity_probed


@bound(HistoryAsked)
def history(given: HistoryAsked) -> None:
    """Change points in one engine's results over time (nightly runs, say): the results
    directories in the order they ran, each a point, its repetitions its values."""
    tell(history_followed(given))


@bound(BisectAsked)
def bisect(given: BisectAsked) -> None:
    """Which release first changed a cell: the releases between --good and --bad bisected,
    each step measured in paired rounds as a precision search measures them (sliced and
    isolated unless the spec names another order) until its interval decides or the budget
    would be spent; then what differs
    between the last good and the first changed release (settings, per-transaction costs, an
    on-CPU profile drawn as a differential flame graph). Exits 5 when the two ends cannot
    be told apart nor called the same within its repetitions."""
    tell(bisected(given, display_for(console), say))


@bound(CapacityAsked)
def capacity(given: CapacityAsked) -> None:
    """The highest rate each engine and tier sustains under a latency objective: open-loop
    probes, bracketing then bisecting the rate, repeated at the boundary until the verdict
    is clear; ranked, with the closed-loop peak beside each."""
    tell(capacity_probed(given, display_for(console)))


@bound(GateAsked)
def gate(given: GateAsked) -> None:
    """A regression gate for CI: exit 0 when no point regressed beyond --margin, 1 when one
    did (named), 5 when the intervals cannot tell (undecided), 2 for an input that cannot be
    judged (with an error line). Prints a Markdown summary (append it to
    $GITHUB_STEP_SUMMARY) and writes JUnit XML, one test case per point."""
    from oltplab.report.gate_summary import gated  # the report package loads Matplotlib

    tell(gated(given))


@bound(SiteAsked)
def site(given: SiteAsked) -> None:
    """One static, offline site over many results directories: an index of the runs with
    their provenance and calibration, each run's report, and one page per point with its
    figure in every run, the interval of each, the change points along them, and links to
    the raw files. Open OUTPUT/index.html; it needs no server and no network."""
    from oltplab.experiments.calibrate import floor_for
    from oltplab.report.site import build_site

    with console.status(f"building the site over {len(given.results)} results directories"):
        built = build_site(given.results, given.output, floor_for)
    tell(built.told())
