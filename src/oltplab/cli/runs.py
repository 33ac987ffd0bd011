"""Commands that measure: `run`, `rerun`, `demo` and `calibrate`."""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from oltplab.base.errors import EXIT_BAD_INPUT, EXIT_REGRESSED, OltplabError
from oltplab.base.metrics import MEASURES, TPS, Measure
from oltplab.base.stats import MIN_REPETITIONS
from oltplab.base.wording import counted
from oltplab.cli.app import (
    WEEK_SECONDS,
    AllowMismatchOption,
    MeasureOption,
    ResultsOption,
    console,
    errors,
    flag,
    folder_option,
    measure_of,
    parse_duration,
    report_hint,
    report_outcome,
    run_and_report,
    unlike,
)
from oltplab.cli.display import display_for, noise_table, reproduction_table, touches
from oltplab.cli.options import bound
from oltplab.cli.vocabulary import MARGIN, margin_option, margin_pct, parse_percent
from oltplab.measure.request import RunRequest
from oltplab.plan.blocks import Shard
from oltplab.plan.lengths import ONE_REPETITION
from oltplab.spec import Spec, derived_spec, load_spec, parse_spec
from oltplab.store.directory import ResultsDir
from oltplab.store.files import write_atomic
from oltplab.store.lock import ResultsLock
from oltplab.store.provenance import RunRecord, differences, read_run_json
from oltplab.store.scratch import WORK_DIR_ENV
from oltplab.telemetry import registry

if TYPE_CHECKING:  # the analysis loads SciPy, which most commands never need
    from oltplab.analysis.reproduce import Reproduction


@dataclass(frozen=True)
class RunOptions:
    spec: Annotated[Path, typer.Argument(metavar="SPEC", help="The spec file (TOML).")]
    results: ResultsOption
    retry_failed: Annotated[
        bool, flag("--retry-failed", help="Run cells that failed in an earlier run again.")
    ] = False
    prepare_endpoints: Annotated[
        bool,
        flag(
            "--prepare",
            "--prepare-endpoints",
            help="Create the sbtest tables on endpoint engines that lack them (oltplab never "
            "writes to an endpoint unasked).",
        ),
    ] = False
    cleanup: Annotated[
        bool,
        flag(
            "--cleanup",
            help="After the run, drop the sbtest tables from endpoint engines (sysbench "
            "cleanup); nothing else there is touched.",
        ),
    ] = False
    until_cv: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            help="Adaptive: repeat each cell group until the coefficient of "
            "variation of its TPS across repetitions is below this (e.g. 0.03).",
        ),
    ] = None
    max_repetitions: Annotated[
        int, typer.Option(min=2, help="Adaptive: at most this many repetitions per cell.")
    ] = 10
    telemetry: Annotated[
        str,
        typer.Option(
            metavar="NAMES",
            help="The telemetry devices, by name, separated by commas: `default`, `none`, "
            "or any of " + registry.described() + ". The load sampler (the server's CPU and "
            "other processes' load) always runs.",
        ),
    ] = registry.DEFAULT
    no_telemetry: Annotated[
        bool,
        flag(
            "--no-telemetry",
            help="Same as --telemetry none (bench/telemetry_overhead.py measures the devices' "
            "overhead this way).",
        ),
    ] = False
    shard: Annotated[
        str | None,
        typer.Option(
            help="Run only shard K of N (K/N): its blocks of the matrix, between its canaries "
            "(see oltplab plan); merge the shards with oltplab merge.",
        ),
    ] = None
    profile: Annotated[
        bool,
        flag(
            "--profile",
            help="Same as adding `perf` to --telemetry: the server profiled on-CPU in every "
            "measured cell (perf record, cpu-clock), folded stacks beside each cell's output "
            "(any flame graph tool reads them); `oltplab bisect --explain` compares two "
            "releases' own time per function and draws their differential flame graph.",
        ),
    ] = False
    snapshots: Annotated[
        Path | None,
        typer.Option(
            help="A folder shared by the machines of a distributed run, or by every run on one "
            "machine: each engine's dataset is prepared once, by whichever run needs it first, "
            "and taken from here by the others (default: the folder OLTPLAB_SNAPSHOTS names, "
            "if set).",
        ),
    ] = None
    work_dir: Annotated[
        Path | None,
        typer.Option(
            help="Node-local folder for the engines' datadirs, snapshots and prepare output "
            "(default: RESULTS/.work; a shard started by oltplab submit uses its node's "
            "temporary storage). Keep it off network storage: the engine's I/O goes there.",
        ),
    ] = None
    margin: Annotated[
        str | None,
        margin_option(
            "add paired rounds (sliced and isolated unless the spec names another order) "
            "until every comparison (each engine, tier and workload against the first) is "
            "DIFFERENT or SAME within ±PCT, judged on its 90% interval; undecided ones end "
            "UNKNOWN when --budget runs out. Same as [protocol] target_ci_pct."
        ),
    ] = None
    budget: Annotated[
        str | None,
        typer.Option(
            metavar="TIME",
            help="With --margin: add no round that would end after this much time "
            "(90s, 30m, 2h), counted to the second while the search runs, over its resumes. "
            "Same as [protocol] budget_seconds.",
        ),
    ] = None
    measure: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="With --margin: what the comparisons are judged on: tps, cpu_us_per_txn "
            "(the server's CPU per transaction), switches_per_txn, or nopm (New-Orders a "
            "minute, the default when every workload is TPC-C-like; else tps). Same as "
            "[protocol] precision_measure.",
        ),
    ] = None
    rerun_disturbed: Annotated[
        bool,
        flag(
            "--rerun-disturbed",
            help="Measure again each cell flagged interference (other processes or the "
            "hypervisor took a quarter of a CPU in a tenth of its steady seconds), with its "
            "round's other engines when interleaved; up to twice. The earlier results stay "
            "in the ledger, set aside.",
        ),
    ] = False
    canary: Annotated[
        bool,
        flag(
            "--canary",
            help="Measure an identical twin of the first engine in every round: its "
            "verdict against the first (SAME, or DIFFERENT: host unfit for this margin) is "
            "in the report, the gate and the site. Costs the twin's cells. Same as "
            "[protocol] canary.",
        ),
    ] = False


@bound(RunOptions)
def run(given: RunOptions) -> None:
    """Run a benchmark matrix; the same command on the same directory resumes it.

    Cells already done are skipped and the cell a killed run had in flight runs again.
    Exits 1 when any cell failed (the final table lists them with their reasons).
    """
    parsed = with_precision(load_spec(given.spec), given.margin, given.budget, given.measure)
    if given.canary:
        parsed = with_canary(parsed)
    protocol = parsed.protocol
    if protocol.stop == "adaptive" and protocol.repetitions == 1 and given.until_cv is None:
        errors.print(f"note: {ONE_REPETITION}", highlight=False, markup=False)
    work_dir = folder_option(given.work_dir, "--work-dir")
    if work_dir is not None:  # read where each engine's scratch is placed, and by its canary
        os.environ[WORK_DIR_ENV] = str(work_dir)
    devices = registry.NONE if given.no_telemetry else given.telemetry
    run_and_report(
        RunRequest(
            parsed,
            given.spec.read_text(),
            str(given.spec),
            given.results,
            retry_failed=given.retry_failed,
            prepare_endpoints=given.prepare_endpoints,
            cleanup_endpoints=given.cleanup,
            until_cv=given.until_cv,
            max_repetitions=given.max_repetitions,
            telemetry=registry.chosen(devices + (f",{registry.PROFILE}" if given.profile else "")),
            spec_base=given.spec.resolve().parent,
            shard=Shard.parse(given.shard) if given.shard is not None else None,
            snapshots=folder_option(given.snapshots, "--snapshots"),
            rerun_disturbed=given.rerun_disturbed,
        )
    )


def rerun(
    original: Annotated[
        Path,
        typer.Argument(
            metavar="ORIGINAL", help="A results directory written by `oltplab run` (has run.json)."
        ),
    ],
    results: ResultsOption,
    yes: Annotated[
        bool,
        flag("--yes", "-y", help="Start without asking (what it touches is still shown)."),
    ] = False,
    margin: Annotated[
        str | None,
        margin_option(
            "the repeat counts as the original's within ±PCT (two one-sided tests on the "
            "90% interval); default: margin_pct of the spec's compare section, 5."
        ),
    ] = None,
) -> None:
    """Run again what ORIGINAL's run.json describes, into a new results directory.

    The spec comes from run.json alone, which may have been written by someone else: the
    engines, hosts, paths, scripts and raw server options it will use are shown first, and
    the run starts only when you confirm (or pass --yes). What differs from the original run
    and could move the numbers (kernel, CPU, governor, sysbench and its scripts, engine
    binaries) is printed and written into the new run.json under "differences". Compare the
    two with `oltplab report ORIGINAL NEW`.
    """
    recorded = read_run_json(original)
    if results.resolve() == original.resolve():
        raise OltplabError(f"--results {results}: must differ from {original} (the run to repeat)")
    spec_info = recorded["spec"]
    base = Path(spec_info["base"])
    spec = parse_spec(spec_info["text"], f"{ResultsDir(original).run_json} (spec.text)", base)
    console.print(f"{ResultsDir(original).run_json} will use:", highlight=False)
    for line in touches(spec, results):
        console.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)
    if not yes:
        if not sys.stdin.isatty():
            raise OltplabError(
                f"rerun {original}: confirm with --yes to run what it lists above "
                "(no terminal to ask on)"
            )
        if not typer.confirm("Start?", default=False):
            raise typer.Exit(EXIT_BAD_INPUT)
    display = display_for(console)
    from oltplab.measure.runner import run as run_matrix

    again = RunRequest(
        spec,
        spec_info["text"],
        f"rerun of {original}",
        results,
        telemetry=registry.recorded(recorded.get("telemetry", True)),
        spec_base=base,
        rerun_of={"results": str(original.resolve()), "spec_digest": spec_info.get("digest")},
    )
    outcome = run_matrix(again, display)
    with ResultsLock(results):
        repeat = RunRecord(results.resolve(), read_run_json(results))
        repeat.data["differences"] = differences(recorded, repeat.data)
        repeat.save()
    for difference in repeat.data["differences"]:
        errors.print(f"[yellow]differs from the original run:[/yellow] {difference}")
    if not outcome.interrupted:
        _judge_repeat(original, results, margin_pct(margin, spec.compare.margin_pct), repeat)
    report_outcome(results, outcome)


def _judge_repeat(
    original: Path,
    repeat: Path,
    margin: float,
    record: RunRecord | None,
    measure: Measure = TPS,
) -> Reproduction:
    from oltplab.analysis.reproduce import reproduction

    found = reproduction(original, repeat, margin, measure)
    console.print(reproduction_table(found))
    console.print(f"verdict: {found.verdict}", highlight=False)
    if record is not None:
        record.data["reproduction"] = {
            "margin_pct": margin,
            "verdict": found.verdict,
            "points": [
                {"point": list(point), "verdict": judged.describe("reproduced")}
                for point, judged in found.points
            ],
        }
        record.save()
    return found


def reproduced(
    original: Annotated[
        Path, typer.Argument(metavar="ORIGINAL", help="The results directory measured first.")
    ],
    repeat: Annotated[
        Path, typer.Argument(metavar="REPEAT", help="The results directory measured again.")
    ],
    more: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="[MORE]...",
            help="More sessions of the same spec, each judged against ORIGINAL too.",
            show_default=False,
        ),
    ] = None,
    margin: Annotated[str, margin_option("they count as the same within ±PCT.")] = "5%",
    measure: MeasureOption = "tps",
    allow_mismatch: AllowMismatchOption = False,
) -> None:
    """Whether REPEAT (and each of MORE) reproduces ORIGINAL within ±MARGIN% at every point
    both measured: `reproduced within 5%`, `not reproduced`, or `undecided` (with the
    repetitions that would decide), always with each point's interval. Where the runs
    compare engines, also the between-session spread of each comparison (each session's
    estimate within its run, their spread, and the estimate across sessions), stored for
    this host: `bisect` widens its verdicts by it. Exits 0 when reproduced, 1 when not, 5
    when undecided."""
    sessions = [original, repeat, *(more or [])]
    unlike(sessions, refuse=not allow_mismatch)
    chosen = measure_of(measure)
    found = [
        _judge_repeat(original, again, margin_pct(margin, 5.0), None, chosen)
        for again in sessions[1:]
    ]
    _between_sessions(sessions, chosen)
    console.print(f"Next: {report_hint(sessions)}", highlight=False, soft_wrap=True)
    statuses = {f.exit_status for f in found}
    raise typer.Exit(EXIT_REGRESSED if EXIT_REGRESSED in statuses else max(statuses))


def _between_sessions(sessions: list[Path], measure: Measure) -> None:
    """The spread of each engine comparison over the sessions, printed and stored."""
    from oltplab.analysis.reproduce import points_of
    from oltplab.analysis.sessions import session_spreads
    from oltplab.experiments.session_spread import MIN_SESSIONS, save

    spreads = session_spreads([points_of(s, measure) for s in sessions])
    if not spreads:
        return
    console.print(f"\nBetween sessions, on {measure.label}:", highlight=False)
    for spread in spreads:
        console.print("\n".join(spread.lines()), highlight=False, soft_wrap=True)
    stored = save(spreads)
    console.print(
        f"Stored for this host in {stored}: bisect widens the verdicts it draws across "
        "builds by the widest of these spreads; `oltplab calibrations` lists what is stored.",
        highlight=False,
        soft_wrap=True,
    )
    if len(sessions) < MIN_SESSIONS:
        console.print(
            f"Not used by bisect: {len(sessions)} sessions give a spread too uncertain to "
            f"widen a verdict by (it takes {MIN_SESSIONS}: `oltplab reproduced ORIGINAL "
            "REPEAT MORE...`).",
            highlight=False,
            soft_wrap=True,
        )


def demo(
    results: Annotated[Path, typer.Option("--results", "-r", help="Results directory.")] = Path(
        "runs/demo"
    ),
) -> None:
    """A small real matrix with the built-in spec: MySQL 8.0.31 and MariaDB 10.11.5; then
    one of its comparisons measured until it is decided (read-only at 4 threads, within
    ±5%, paired rounds for about a minute more, into RESULTS-decide), or said undecided
    with what would decide it."""
    text = resources.files("oltplab").joinpath("spec/demo.toml").read_text()
    spec = parse_spec(text, "demo spec")
    run_and_report(RunRequest(spec, text, "demo spec", results))
    _demo_decision(spec, results.with_name(f"{results.name}-decide"))


DEMO_MARGIN_PCT = 5.0


def _demo_decision(spec: Spec, results: Path) -> None:
    """The demo's one comparison that concludes: a single plain run of each engine cannot
    say whether a difference is real, a minute of paired rounds here usually can."""
    from oltplab.analysis.precision import UNKNOWN
    from oltplab.cli.display import answers_table
    from oltplab.experiments.until_answered import measure_until_answered

    data = spec.model_dump(mode="json", exclude_none=True)
    data["workloads"] = [w for w in data["workloads"] if w["name"] == "oltp_read_only"]
    data["protocol"].update(threads=[4], target_ci_pct=DEMO_MARGIN_PCT, budget_minutes=1)
    decide, text = derived_spec(data, "demo decision")
    console.print(
        f"Deciding one comparison: paired rounds until it is DIFFERENT or SAME within "
        f"±{DEMO_MARGIN_PCT:g}%, for a minute at most (into {results})",
        highlight=False,
    )
    search = measure_until_answered(
        RunRequest(decide, text, "demo decision", results), display_for(console)
    )
    if not search.answers:
        report_outcome(results, search.outcome)
        return
    console.print(answers_table(search.answers, search.rounds, search.stopped))
    written = ResultsDir(results).derived_spec
    write_atomic(written, text)
    for answer in search.answers:
        console.print(answer.describe(), highlight=False, soft_wrap=True)
        if answer.verdict == UNKNOWN:
            longer = results.with_name(f"{results.name}-longer")
            console.print(
                f"this host's rounds spread more than a minute can narrow to "
                f"±{DEMO_MARGIN_PCT:g}%; `oltplab run {written} --margin {DEMO_MARGIN_PCT:g}% "
                f"--budget 10m -r {longer}` gives the same search longer",
                highlight=False,
                soft_wrap=True,
            )
    console.print(f"Next: oltplab report {results}", highlight=False)


class RoundsOrder(StrEnum):
    INTERLEAVED = "interleaved"
    ALTERNATING = "alternating"
    SLICED = "sliced"


def calibrate(
    engine: Annotated[
        str, typer.Argument(metavar="ENGINE", help="A catalog engine, e.g. mariadb-10.11.5.")
    ],
    results: Annotated[
        Path | None, typer.Option("--results", "-r", help="Default: runs/calibrate-ENGINE.")
    ] = None,
    repetitions: Annotated[
        int,
        typer.Option(
            min=MIN_REPETITIONS,
            max=1000,
            help=f"Rounds of A and B ({MIN_REPETITIONS} at least: fewer give no interval).",
        ),
    ] = 5,
    seconds: Annotated[
        int, typer.Option(min=3, max=WEEK_SECONDS, help="Seconds per measurement.")
    ] = 30,
    threads: Annotated[
        list[int] | None,
        typer.Option(min=1, max=10_000, help="Thread counts (repeat the option)."),
    ] = None,
    workload: Annotated[str, typer.Option(help="The sysbench test.")] = "oltp_read_only",
    measure: MeasureOption = "tps",
    order: Annotated[
        RoundsOrder,
        typer.Option(
            help="How A and B take turns: sliced (both kept running, each round's cells at "
            "once in short time slots, isolated: as --margin searches and bisect measure), "
            "alternating (both kept running, cells back to back, isolated) or interleaved "
            "(a restart and warm-up per cell, as plain runs measure); a spec is planned, and "
            "a report quoted, with the calibration of its order."
        ),
    ] = RoundsOrder.SLICED,
) -> None:
    """Measure this host's noise floor: one engine as A and as B, in paired rounds.

    Any difference between A and B is noise; the widest bound of their 95% intervals is
    printed and stored for this host, order of rounds, engine and date. `oltplab report`
    quotes the one of its results' host and order nearest their date; `oltplab plan
    --margin` plans with the latest of the spec's order.
    """
    run_calibration(
        engine, results, repetitions, seconds, threads or [1, 4], workload, measure, order
    )
    console.print("Next: oltplab plan SPEC --margin 3% (rounds and hours on this host)")


def run_calibration(
    engine: str,
    results: Path | None,
    repetitions: int,
    seconds: int,
    threads: list[int],
    workload: str,
    measure: str,
    order: str,
) -> None:
    """One calibration measured, its table printed and it stored (calibrate, and plan
    --calibrate)."""
    from oltplab.analysis.dataset import load
    from oltplab.analysis.estimate import SIGNIFICANT
    from oltplab.experiments.calibrate import (
        calibration_spec,
        noise_floor,
        save,
        session_overhead,
        stored_calibrations,
    )
    from oltplab.plan import build_plan, plan_seconds

    stored_calibrations()  # where it is damaged, said before the measuring, not after
    text = calibration_spec(engine, repetitions, seconds, threads, workload, order)
    spec = parse_spec(text, f"calibrate {engine}")
    folder = results or Path("runs") / f"calibrate-{engine}"
    display = display_for(console)
    from oltplab.measure.runner import run as run_matrix

    started = time.monotonic()
    outcome = run_matrix(RunRequest(spec, text, f"calibrate {engine}", folder), display)
    if outcome.failed or outcome.interrupted:
        report_outcome(folder, outcome)
    floor = noise_floor(load([folder]), engine, measure_of(measure))
    console.print(noise_table(engine, floor.comparisons))
    for (scenario, count), found in floor.comparisons.items():
        if found.verdict == SIGNIFICANT:
            errors.print(
                f"warning: {scenario} at {counted(count, 'thread')}: the same binary came out "
                f"different ({found.with_interval('95%')}): this host's noise (drift, other "
                "load, a dip in one side's rounds) breaks what the interval assumes, and the "
                "noise floor counts it; more rounds (--repetitions) or longer cells "
                "(--seconds) give the interval more to go on",
                highlight=False, soft_wrap=True,
            )  # fmt: skip
    sessions = build_plan(spec)
    measured = plan_seconds(spec, sessions, {c.key for s in sessions for c in s.cells})
    overhead = session_overhead(time.monotonic() - started, len(sessions), measured)
    stored = save(floor, folder, seconds, overhead, repetitions, order)
    console.print(
        f"noise floor on this host: ±{floor.value:.1f}% (stored in {stored} for reports and "
        f"plans of {order} rounds; `oltplab calibrations` lists what is stored)",
        highlight=False,
        soft_wrap=True,
    )
    spreads = ", ".join(f"{k} {v:.1f}%" for k, v in floor.round_spread_pct.items())
    console.print(
        f"round-to-round spread of A against B: {spreads}; about {overhead:.0f} s a session "
        "beyond its warm-up and cells (stored for `oltplab plan --margin`)",
        highlight=False,
    )
    chosen = measure_of(measure)
    spread = floor.round_spread_pct.get(chosen.name)
    if spread is not None:
        from oltplab.base.sizes import duration_text
        from oltplab.cli.margins import DEFAULT_BUDGET_MINUTES, which_margin

        per_round = (time.monotonic() - started) / repetitions
        table, said = which_margin(spread, per_round, DEFAULT_BUDGET_MINUTES * 60, chosen.label)
        console.print(table)
        console.print(f"{said} A round here took {duration_text(per_round)}.", highlight=False)


def with_canary(spec: Spec) -> Spec:
    """The spec with its canary: validated again, which adds the first engine's twin."""
    data = spec.model_dump(mode="json", exclude_none=True)
    data["protocol"]["canary"] = True
    return derived_spec(data, "--canary")[0]


def with_precision(spec: Spec, margin: str | None, budget: str | None, measure: str | None) -> Spec:
    """The spec with the command line's precision search: its margin, budget and measure."""
    changes: dict[str, object] = {}
    if margin is not None:
        changes["target_ci_pct"] = parse_percent(margin, MARGIN)
    if budget is not None:
        changes["budget_seconds"] = math.ceil(parse_duration(budget, "--budget"))
        changes["budget_minutes"] = None
    if measure is not None:
        if measure not in MEASURES:
            raise OltplabError(f"--measure {measure}: expected one of {', '.join(MEASURES)}")
        changes["precision_measure"] = measure
    if not changes:
        return spec
    if spec.protocol.target_ci_pct is None and "target_ci_pct" not in changes:
        raise OltplabError("--budget and --measure need --margin PCT (or target_ci_pct)")
    protocol = spec.protocol.model_copy(update=changes)
    return spec.model_copy(update={"protocol": protocol})
