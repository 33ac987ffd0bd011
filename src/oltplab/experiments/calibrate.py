"""The noise floor: what a no-change comparison shows on this host.

The same engine runs as A and as B in interleaved rounds; any difference between them is
noise. The widest bound of their 95% intervals is the smallest difference this host can
tell apart. It is stored per host, order of rounds, engine and date, and a report quotes
the one of its own host and order nearest its own date, with that date.
"""

from __future__ import annotations

import json
import math
import platform
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oltplab.analysis.dataset import Dataset, load
from oltplab.analysis.estimate import SIGNIFICANT, Comparison
from oltplab.analysis.model import QuotedFloor
from oltplab.analysis.points import Points
from oltplab.analysis.precision import round_spread_pct
from oltplab.base.asking import WEEK_SECONDS, argument, measure_option, option
from oltplab.base.errors import EnvironmentProblem, OltplabError
from oltplab.base.given import measure_of
from oltplab.base.metrics import MEASURES, TPS, Measure
from oltplab.base.nesting import load_json
from oltplab.base.sizes import duration_text
from oltplab.base.stats import MIN_REPETITIONS
from oltplab.base.telling import Note, Rows, Said, Told
from oltplab.base.wording import counted
from oltplab.engines.cache import cache_root
from oltplab.measure.request import Display, RunRequest
from oltplab.plan import build_plan, plan_seconds
from oltplab.spec import parse_spec
from oltplab.spec.catalog import CATALOG
from oltplab.store.files import write_atomic

if TYPE_CHECKING:  # the runner loads the engines' drivers, which reports never need
    from oltplab.measure.runner import RunOutcome


def calibration_spec(
    engine: str,
    repetitions: int,
    seconds: int,
    threads: list[int],
    workload: str,
    order: str = "interleaved",
) -> str:
    """The spec of a calibration run, as TOML text (it is stored with the results)."""
    if engine not in CATALOG:
        raise OltplabError(
            f"unknown engine {engine!r}: calibrate takes one of {', '.join(sorted(CATALOG))}"
        )
    kind, value = next(iter(CATALOG[engine].source.items()))
    engines = "".join(
        f'[[engines]]\nname = "{engine}-{side}"\nsource = {{ {kind} = "{value}" }}\n\n'
        for side in ("a", "b")
    )
    return (
        f"# oltplab calibrate {engine}: the same engine as A and B, {order}\n"
        f'name = "calibrate-{engine}"\nworkloads = ["{workload}"]\n\n{engines}'
        "[dataset]\ntables = 2\ntable_size = 10000\n\n"
        "[protocol]\nwarmup_ro_seconds = 5\nwarmup_rw_seconds = 5\nwarmup_threads = 2\n"
        f"measure_seconds = {seconds}\nthreads = {threads}\nrepetitions = {repetitions}\n"
        f'order = "{order}"\n'
        # Alternating and sliced calibrations plan --margin searches, which are isolated
        # unless a spec says otherwise; the interleaved one is the noise floor of plain runs.
        f"isolation = {'false' if order == 'interleaved' else 'true'}\n"
    )


@dataclass(frozen=True)
class NoiseFloor:
    engine: str
    comparisons: dict[tuple[str, int], Comparison]
    # Per measure: how much the A/B log ratio spreads from round to round, in percent (the
    # widest over the points calibrated): what `plan --margin` plans with.
    round_spread_pct: dict[str, float] = field(default_factory=dict)

    @property
    def value(self) -> float:
        bounds = [
            max(abs(c.low_pct), abs(c.high_pct))
            for c in self.comparisons.values()
            if c.low_pct is not None and c.high_pct is not None
        ]
        if not bounds:
            why = sorted({c.estimate.method for c in self.comparisons.values()})
            raise OltplabError(
                "calibration gave no usable comparison of A and B ("
                + ("; ".join(why) or "no point both measured")
                + "): give what is short, --repetitions or --seconds"
            )
        return max(bounds)

    def warnings(self) -> list[str]:
        """One for each point where the same binary came out different."""
        return [
            f"warning: {scenario} at {counted(count, 'thread')}: the same binary came out "
            f"different ({found.with_interval('95%')}): this host's noise (drift, other load, "
            "a dip in one side's rounds) breaks what the interval assumes, and the noise "
            "floor counts it; more rounds (--repetitions) or longer cells (--seconds) give "
            "the interval more to go on"
            for (scenario, count), found in self.comparisons.items()
            if found.verdict == SIGNIFICANT
        ]

    def said(self) -> Told:
        """The no-change comparisons, engine A against itself as B, and a warning for each
        that came out different."""
        title = f"No-change comparison: {self.engine}-a vs {self.engine}-b"
        columns = ("scenario", "threads", "difference", "95% interval", "verdict", "method")
        rows = tuple(
            (scenario, str(count), f"{c.diff_pct:+.1f}%", c.interval(), c.verdict, c.method)
            for (scenario, count), c in self.comparisons.items()
        )
        return Told((Rows(title, columns, rows), *map(Note, self.warnings())))


def noise_floor(dataset: Dataset, engine: str, measure: Measure = TPS) -> NoiseFloor:
    points = Points(dataset, measure=measure)
    comparisons = {}
    for scenario, tier, name, threads in sorted(points.samples()):
        if name != f"{engine}-a":
            continue
        versus = points.comparison(
            (scenario, tier, name, threads), (scenario, tier, f"{engine}-b", threads)
        )
        if versus is not None:
            comparisons[(scenario, threads)] = versus
    return NoiseFloor(engine, comparisons, round_spreads(dataset, engine))


def round_spreads(dataset: Dataset, engine: str) -> dict[str, float]:
    """Per measure, the widest round-to-round spread of A against B over the points."""
    found = {}
    for measure in MEASURES.values():
        samples = Points(dataset, measure=measure).samples()
        spreads = [
            spread
            for (scenario, tier, name, threads), a in samples.items()
            if name == f"{engine}-a"
            and (b := samples.get((scenario, tier, f"{engine}-b", threads))) is not None
            and (spread := round_spread_pct(a, b)) is not None
        ]
        if spreads:
            found[measure.name] = max(spreads)
    return found


@dataclass(frozen=True)
class Calibration:
    """What plan needs of this host: the round spread of each measure, the cell length it
    was measured with, and what a session costs beyond its warm-up and cells (restoring
    the datadir, starting and stopping the engine)."""

    round_spread_pct: dict[str, float]
    cell_seconds: int
    session_overhead_s: float
    engine: str
    order: str
    measured_at: str  # ISO 8601, as stored; "" for one stored without it
    rounds: int | None  # None: stored before calibrations kept their rounds

    def describe(self) -> str:
        """`mariadb-10.11.5, sliced rounds, 2026-12-06, 5 rounds`"""
        rounds = f"{self.rounds} rounds" if self.rounds else "rounds not recorded"
        when = f", {self.measured_at[:10]}" if self.measured_at else ""
        return f"{self.engine}, {self.order} rounds{when}, {rounds}"


def session_overhead(wall_seconds: float, sessions: int, measured_seconds: float) -> float:
    return max(0.0, (wall_seconds - measured_seconds) / max(1, sessions))


def store() -> Path:
    """Where this machine's calibrations are kept."""
    return cache_root() / "noise-floor.json"


def calibration_order(order: str) -> str:
    """The calibration that speaks for rounds in this order: runs that restart and warm up
    each cell (as listed, random, interleaved) are calibrated interleaved; rounds kept
    running, in their own order."""
    return order if order in ("alternating", "sliced") else "interleaved"


def stored_calibrations() -> list[dict[str, Any]]:
    """Every calibration stored on this machine, oldest first. Files written before
    calibrations were kept per engine and date held one per host (and order) by key. A
    damaged file is refused, named, rather than read as empty: the next calibration would be
    stored over the calibrations in it."""
    path = store()
    if not path.is_file():
        return []
    try:
        found = _calibrations(load_json(path.read_bytes()))
    except ValueError as exc:
        raise EnvironmentProblem(
            f"{path}: damaged ({exc}); it keeps this host's noise floors: mend it, or clear "
            "it (`oltplab calibrations --clear`) and run `oltplab calibrate ENGINE` again"
        ) from None
    return found


def _calibrations(known: object) -> list[dict[str, Any]]:
    """The calibrations of a noise-floor.json's contents; ValueError naming the first
    that the readers below could not use."""
    if not isinstance(known, dict):
        raise ValueError("not a JSON object")
    if "calibrations" in known:
        listed = known["calibrations"]
        if not isinstance(listed, list):
            raise ValueError("calibrations: not a list")
        entries = {f"calibrations[{i}]": entry for i, entry in enumerate(listed)}
    else:
        entries = {key: _keyed(key, entry) for key, entry in known.items()}
    for where, entry in entries.items():
        problem = _problem(entry)
        if problem:
            raise ValueError(f"{where}: {problem}")
    found = list(entries.values())
    if "calibrations" in known:
        return found
    return sorted(found, key=lambda e: str(e.get("measured_at", "")))


def _keyed(key: str, entry: object) -> object:
    """A calibration of a file from before they were listed: its host and order in its key."""
    if not isinstance(entry, dict):
        return entry
    host, _, order = key.partition("/")
    return {"host": host, "order": order or "interleaved", **entry}


def _problem(entry: object) -> str | None:
    if not isinstance(entry, dict):
        return "not a JSON object"
    texts = ("host", "order", "engine", "measured_at", "results")
    wrong = next((key for key in texts if not isinstance(entry.get(key, ""), str)), None)
    if wrong:
        return f"{wrong}: not text"
    if not _number(entry.get("noise_floor_pct")):
        return "noise_floor_pct: not a number"
    spread = entry.get("round_spread_pct")
    if spread and not (isinstance(spread, dict) and all(map(_number, spread.values()))):
        return "round_spread_pct: not an object of numbers"
    if spread and not all(_number(entry.get(k)) for k in ("cell_seconds", "session_overhead_s")):
        return "cell_seconds and session_overhead_s: not numbers"
    return None


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def save(
    floor: NoiseFloor,
    results: Path,
    cell_seconds: int,
    session_overhead_s: float,
    rounds: int,
    order: str = "interleaved",
) -> Path:
    """Kept beside every other calibration, under its host, order, engine and date, with
    the rounds it took: a report quotes the one of its own host and order nearest its own
    date. Where it is kept."""
    path = store()
    path.parent.mkdir(parents=True, exist_ok=True)
    calibrations = stored_calibrations()
    calibrations.append(
        {
            "host": platform.node(),
            "order": order,
            "engine": floor.engine,
            "noise_floor_pct": round(floor.value, 2),
            "round_spread_pct": {k: round(v, 3) for k, v in floor.round_spread_pct.items()},
            "cell_seconds": cell_seconds,
            "session_overhead_s": round(session_overhead_s, 1),
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "results": str(results.resolve()),
            "rounds": rounds,
        }
    )
    write_atomic(path, json.dumps({"calibrations": calibrations}, indent=2))
    return path


def usable(entry: dict[str, Any]) -> bool:
    """Whether a stored calibration has the rounds calibrate asks at least (one stored
    before rounds were kept is taken as it always was)."""
    rounds = entry.get("rounds")
    return not isinstance(rounds, int) or rounds >= MIN_REPETITIONS


def calibration_here(order: str = "interleaved") -> Calibration | None:
    """This host's latest calibration of rounds in this order, for planning, if `oltplab
    calibrate` has stored one."""
    mine = [
        c
        for c in stored_calibrations()
        if c.get("host") == platform.node() and c.get("order") == order
        if c.get("round_spread_pct") and usable(c)
    ]
    if not mine:
        return None
    entry = mine[-1]
    rounds = entry.get("rounds")
    return Calibration(
        {str(k): float(v) for k, v in entry["round_spread_pct"].items()},
        int(entry["cell_seconds"]),
        float(entry["session_overhead_s"]),
        str(entry.get("engine", "?")),
        order,
        str(entry.get("measured_at", "")),
        rounds if isinstance(rounds, int) else None,
    )


def _when(text: object) -> datetime | None:
    try:
        found = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def floor_for(dataset: Dataset) -> QuotedFloor | None:
    """The noise floor to quote beside these results: a calibration of the host they ran on
    and of their order of rounds, the one nearest in time to when they started; none for
    results from several hosts, or a host and order never calibrated."""
    hosts = {r["host"]["hostname"] for r in dataset.runs if isinstance(r.get("host"), dict)}
    if len(hosts) != 1:
        return None
    order = calibration_order(dataset.order)
    mine = [
        c
        for c in stored_calibrations()
        if c.get("host") in hosts and c.get("order") == order and usable(c)
    ]
    if not mine:
        return None
    started = min((_when(r.get("started_at")) for r in dataset.runs), key=_sortable, default=None)
    if started is not None:
        mine.sort(key=lambda c: abs((_when(c.get("measured_at")) or started) - started))
    else:
        mine.reverse()
    return _quoted(mine[0])


def floor_here(order: str) -> QuotedFloor | None:
    """This host's latest noise floor for rounds in this order, if one is stored."""
    mine = [
        c
        for c in stored_calibrations()
        if c.get("host") == platform.node() and c.get("order") == calibration_order(order)
        if usable(c)
    ]
    return _quoted(mine[-1]) if mine else None


def _quoted(entry: dict[str, Any]) -> QuotedFloor:
    measured = _when(entry.get("measured_at"))
    return QuotedFloor(
        float(entry["noise_floor_pct"]),
        str(entry.get("engine", "?")),
        str(entry["order"]),
        measured.date().isoformat() if measured else None,
    )


def _sortable(when: datetime | None) -> datetime:
    return when or datetime.max.replace(tzinfo=UTC)


@dataclass(frozen=True)
class CalibrationAsked:
    """One calibration to measure (calibrate's options made whole, and plan --calibrate's)."""

    engine: str
    results: Path
    repetitions: int
    seconds: int
    threads: list[int]
    workload: str
    measure: Measure
    order: str

    def measured(self, display: Display) -> Calibrated | RunOutcome:
        """The calibration measured and its noise floor found (stored by its `kept`); the
        run's outcome alone when a cell failed or it was interrupted."""
        from oltplab.measure.runner import run

        stored_calibrations()  # where it is damaged, said before the measuring, not after
        text = calibration_spec(
            self.engine, self.repetitions, self.seconds, self.threads, self.workload, self.order
        )
        spec = parse_spec(text, f"calibrate {self.engine}")
        started = time.monotonic()
        outcome = run(RunRequest(spec, text, f"calibrate {self.engine}", self.results), display)
        if outcome.failed or outcome.interrupted:
            return outcome
        floor = noise_floor(load([self.results]), self.engine, self.measure)
        sessions = build_plan(spec)
        measured = plan_seconds(spec, sessions, {c.key for s in sessions for c in s.cells})
        overhead = session_overhead(time.monotonic() - started, len(sessions), measured)
        return Calibrated(self, floor, overhead, started)


def calibration_folder(engine: str) -> Path:
    """Where a calibration's run goes when no --results is given."""
    return Path("runs") / f"calibrate-{engine}"


class RoundsOrder(StrEnum):
    INTERLEAVED = "interleaved"
    ALTERNATING = "alternating"
    SLICED = "sliced"


@dataclass(frozen=True, kw_only=True)
class CalibrateAsked:
    engine: str = argument("A catalog engine, e.g. mariadb-10.11.5.", "ENGINE")
    results: Path | None = option(None, "Default: runs/calibrate-ENGINE.", "--results", "-r")
    repetitions: int = option(
        5,
        f"Rounds of A and B ({MIN_REPETITIONS} at least: fewer give no interval).",
        min=MIN_REPETITIONS,
        max=1000,
    )
    seconds: int = option(30, "Seconds per measurement.", min=3, max=WEEK_SECONDS)
    threads: list[int] | None = option(
        None, "Thread counts (repeat the option).", min=1, max=10_000
    )
    workload: str = option("oltp_read_only", "The sysbench test.")
    measure: str = measure_option()
    order: RoundsOrder = option(
        RoundsOrder.SLICED,
        "How A and B take turns: sliced (both kept running, each round's cells at once in "
        "short time slots, isolated: as --margin searches and bisect measure), alternating "
        "(both kept running, cells back to back, isolated) or interleaved (a restart and "
        "warm-up per cell, as plain runs measure); a spec is planned, and a report quoted, "
        "with the calibration of its order.",
    )

    def calibration(self) -> CalibrationAsked:
        results = self.results or calibration_folder(self.engine)
        return CalibrationAsked(
            self.engine, results, self.repetitions, self.seconds, self.threads or [1, 4],
            self.workload, measure_of(self.measure), self.order,
        )  # fmt: skip

    def next_step(self) -> Told:
        """Said once calibrated (not after plan --calibrate, which goes on to plan)."""
        return Told(next_step="oltplab plan SPEC --margin 3% (rounds and hours on this host)")


@dataclass(frozen=True)
class Calibrated:
    asked: CalibrationAsked
    floor: NoiseFloor
    overhead_s: float  # a session's, beyond its warm-up and cells
    started: float  # time.monotonic() as the measuring began

    def kept(self) -> Told:
        """Stores it for this host; where, and the round spreads `plan --margin` takes."""
        a, floor = self.asked, self.floor
        stored = save(floor, a.results, a.seconds, self.overhead_s, a.repetitions, a.order)
        spreads = ", ".join(f"{k} {v:.1f}%" for k, v in floor.round_spread_pct.items())
        return Told(
            (
                f"noise floor on this host: ±{floor.value:.1f}% (stored in {stored} for reports "
                f"and plans of {a.order} rounds; `oltplab calibrations` lists what is stored)",
                f"round-to-round spread of A against B: {spreads}; about {self.overhead_s:.0f} s "
                "a session beyond its warm-up and cells (stored for `oltplab plan --margin`)",
                *self.margins(),
            )
        )

    def margins(self) -> tuple[Said, ...]:
        """Which margin to ask for here, from the round spread of the measure calibrated."""
        from oltplab.experiments.margin_advice import DEFAULT_BUDGET_MINUTES, which_margin

        chosen = self.asked.measure
        spread = self.floor.round_spread_pct.get(chosen.name)
        if spread is None:
            return ()
        per_round = self.round_seconds()
        table, said = which_margin(spread, per_round, DEFAULT_BUDGET_MINUTES * 60, chosen.label)
        return (table, f"{said} A round here took {duration_text(per_round)}.")

    def round_seconds(self) -> float:
        """The time a round took here, so far (the run and its analysis, per round)."""
        return (time.monotonic() - self.started) / self.asked.repetitions
