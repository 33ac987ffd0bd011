"""How precise is a comparison on this host, and does the stopping rule decide right?

Each trial is one real run per setting (the order of the rounds, isolation off or on;
which goes first turns with each trial), each of one engine and four workloads measured
in paired rounds: `base` and `aa` (the same planted script with nothing planted: an A/A
pair), `plus3` (50 extra point selects per 100 transactions, about 3% more server work) and
`plus7` (110 per 100, about 7%; one point select is about 6% of an oltp_read_only
transaction here). Every workload is compared with `base`, paired by round.

Three orders can be contrasted: `interleaved` (each cell a session of its own: the
datadir restored, the server started and warmed up), `alternating` (the server started
once, the cells of a round back to back, seconds apart) and `sliced` (the server started
once, the cells of a round at the same time, each in its own short slots in turn,
a quarter second by default).

For each measure (TPS, server CPU per transaction, server context switches per
transaction), each round taken by the mean of its seconds and by their 20% trimmed mean
(`~trim20`), the script prints the coefficient of variation between repetitions and the
half-width of the paired 90% interval after all rounds, and replays the stopping rule of
`oltplab run --precision` (analysis/precision.answers: DIFFERENT or SAME against the
margin from the fourth round on) on the rounds as they came: the verdict, and after how
many rounds and minutes of the trial it was reached. The default shapes take about nine
minutes of machine time per trial and setting.

    python bench/precision.py [--trials 10] [--margin 3]
                              [--order sliced@0.25:14x10,alternating:36x3]
                              [--isolation off,on] [--threads 1] [--keep DIR]
                              [--summarise DIR]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tiny_spec import planted_workloads, tiny_spec

from oltplab.analysis.dataset import load
from oltplab.analysis.points import Points
from oltplab.analysis.precision import MIN_ROUNDS, UNKNOWN, answers, trimmed_rounds
from oltplab.base.metrics import MEASURES, Target
from oltplab.spec import ProtocolSpec

ENGINE = "mariadb-10.11.5"
OLTPLAB = [sys.executable, "-m", "oltplab"]
# One point select is about 6% of an oltp_read_only transaction's server work here.
PLANTED = {"base": 0, "aa": 0, "plus3": 50, "plus7": 110}


def spec(setting: Setting, threads: int) -> str:
    return tiny_spec(
        "precision",
        [ENGINE],
        planted_workloads(PLANTED),
        setting.seconds,
        setting.rounds,
        threads,
        f'order = "{setting.order}"\nslice_seconds = {setting.slice_seconds:g}\n'
        f"isolation = {str(setting.isolation).lower()}\n",
    )


@dataclass
class Decision:
    verdict: str
    rounds: int  # rounds it took (all of them when UNKNOWN)
    minutes: float


@dataclass
class Trial:
    minutes_per_round: float
    cv: dict[tuple[str, str], float]  # (measure, workload) -> CV of repetition means
    half_width: dict[tuple[str, str], float]  # (measure, workload) -> % after all rounds
    decisions: dict[tuple[str, str], Decision]  # (measure, workload) -> the rule's verdict


# Rounds and cell seconds that fit about nine minutes of machine time here: a restart and
# a warm-up per cell when interleaved, cells back to back when alternating (3 s: a 2 s
# run of sysbench now and then prints only its first second).
SLICE_SECONDS: float = ProtocolSpec.model_fields["slice_seconds"].default
DEFAULT_SHAPE = {"alternating": "36x3", "interleaved": "10x8", "sliced": "14x10"}


@dataclass(frozen=True)
class Setting:
    """How a trial measures: the protocol's order, its rounds of cells this long, and
    isolation on or off."""

    order: str
    rounds: int
    seconds: int
    isolation: bool
    slice_seconds: float = SLICE_SECONDS  # sliced rounds only

    @property
    def label(self) -> str:
        isolation = "on" if self.isolation else "off"
        order = f"{self.order}{self.slice_seconds:g}" if self.order == "sliced" else self.order
        return f"{order}-{self.rounds}x{self.seconds}s-isolation-{isolation}"


def settings_of(orders: str, isolation: str) -> list[Setting]:
    """`sliced@0.25:14x10,alternating:36x3,interleaved:10x8` x `off,on`."""
    found = []
    for item in orders.split(","):
        named, _, shape = item.partition(":")
        order, _, slot = named.partition("@")
        rounds, _, seconds = (shape or DEFAULT_SHAPE[order]).partition("x")
        for setting in isolation.split(","):
            found.append(
                Setting(
                    order, int(rounds), int(seconds), setting == "on", float(slot or SLICE_SECONDS)
                )
            )
    return found


def run_trial(work: Path, name: str, setting: Setting, margin: float, threads: int) -> Trial:
    results = work / name
    spec_file = work / f"{name}.toml"
    spec_file.write_text(spec(setting, threads))
    started = time.monotonic()
    done = subprocess.run(
        # The OS tools each start a process per cell and wait out their own clock's last
        # second after it; the load sampler, which the measures need, runs regardless.
        [*OLTPLAB, "run", str(spec_file), "--results", str(results), "--no-telemetry"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"oltplab run failed ({results}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    per_round = (time.monotonic() - started) / 60 / setting.rounds
    return judged(results, setting.rounds, per_round, margin)


def judged(results: Path, rounds: int, per_round: float, margin: float) -> Trial:
    """Each measure's spread, interval and the stopping rule replayed round by round."""
    dataset = load([results])
    trial = Trial(per_round, {}, {}, {})
    for measure in MEASURES.values():
        points = Points(dataset, measure=measure)
        target = Target(margin, measure)
        for suffix, trim in ESTIMATES.items():
            name = measure.name + suffix
            for point, sample in points.samples().items():
                means = trimmed_rounds(sample, trim).rep_means if trim else sample.rep_means
                trial.cv[(name, workload_of(point))] = float(means.std(ddof=1) / means.mean())
            for answer in answers(points, target, trim=trim):
                trial.half_width[(name, workload_of(answer.a))] = answer.half_width_pct or 0.0
            for k in range(MIN_ROUNDS, rounds + 1):
                for answer in answers(points, target, up_to=k, trim=trim):
                    key = (name, workload_of(answer.a))
                    if key in trial.decisions:
                        continue
                    if answer.verdict != UNKNOWN or k == rounds:
                        trial.decisions[key] = Decision(answer.verdict, k, k * per_round)
    return trial


# Each round judged by the mean of its seconds, and by their 20% trimmed mean.
ESTIMATES = {"": 0.0, "~trim20": 0.2}


def workload_of(point: tuple[str, str, str, int]) -> str:
    """The planted workload a point measured (its scenario is `<workload>-local`)."""
    return point[0].removesuffix("-local")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--margin", type=float, default=3.0)
    parser.add_argument("--threads", type=int, default=1, help="sysbench threads per cell")
    parser.add_argument(
        "--order",
        default="sliced",
        help="how the rounds run, comma-separated to contrast them: sliced (the default, "
        "as --precision searches: engines kept running, a round's cells at once, each in "
        f"its own slots of SLOT seconds, {SLICE_SECONDS:g} by default), alternating "
        "(engines kept running, cells back to back) or interleaved (a "
        "restart and a warm-up per cell), each as ORDER[@SLOT][:ROUNDSxSECONDS] (defaults: "
        + ", ".join(f"{o}:{s}" for o, s in DEFAULT_SHAPE.items())
        + ")",
    )
    parser.add_argument(
        "--isolation",
        default="on",
        help="on (the default, as --precision searches), off, or off,on to contrast",
    )
    parser.add_argument(
        "--contrast-trials",
        type=int,
        help="measure the settings after the first in the first N trials only (default: all)",
    )
    parser.add_argument("--keep", type=Path, help="keep the results in this directory")
    parser.add_argument(
        "--summarise",
        type=Path,
        help="print the summary of the trials already in this directory (a --keep of an "
        "earlier run, at its --margin) instead of measuring",
    )
    args = parser.parse_args()
    if args.summarise is not None:
        summarise(earlier(args.summarise, args.margin), args.margin)
        return
    settings = settings_of(args.order, args.isolation)
    work = args.keep or Path(tempfile.mkdtemp(prefix="oltplab-precision-"))
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [*OLTPLAB, "engines", "fetch", ENGINE],
        check=True,
        capture_output=True,
    )
    trials: dict[str, list[Trial]] = defaultdict(list)
    started = time.monotonic()
    for number in range(1, args.trials + 1):
        chosen = settings
        if args.contrast_trials is not None and number > args.contrast_trials:
            chosen = settings[:1]
        # Which setting goes first turns with each trial.
        turn = (number - 1) % len(chosen)
        for setting in chosen[turn:] + chosen[:turn]:
            label = f"trial{number:02d}-{setting.label}"
            trial = run_trial(work, label, setting, args.margin, args.threads)
            trials[setting.label].append(trial)
            said = {
                name: ", ".join(
                    f"{w} {d.verdict} ({d.rounds})"
                    for (m, w), d in sorted(trial.decisions.items())
                    if m == name
                )
                for name in ("tps", "cpu_us_per_txn")
            }
            print(
                f"{label}: {trial.minutes_per_round:.2f} min/round; TPS: {said['tps']}; "
                f"CPU/txn: {said['cpu_us_per_txn']} "
                f"({(time.monotonic() - started) / 60:.0f} min)",
                flush=True,
            )
    summarise(trials, args.margin)
    print(f"\nresults in {work}")


def earlier(work: Path, margin: float) -> dict[str, list[Trial]]:
    """The trials an earlier run kept, minutes per round from when their cells ran."""
    trials: dict[str, list[Trial]] = defaultdict(list)
    for results in sorted(p for p in work.glob("trial*-isolation-*") if p.is_dir()):
        db = sqlite3.connect(results / "ledger.sqlite")
        first, last, rounds = db.execute(
            "SELECT MIN(started_at), MAX(finished_at), MAX(repetition) FROM cells"
        ).fetchone()
        db.close()
        elapsed = datetime.fromisoformat(last) - datetime.fromisoformat(first)
        per_round = elapsed.total_seconds() / 60 / rounds
        label = results.name.split("-", 1)[1]
        trials[label].append(judged(results, rounds, per_round, margin))
    return trials


def summarise(trials: dict[str, list[Trial]], margin: float) -> None:
    print()
    print(f"margin +-{margin:g}%")
    header = (
        f"{'setting':34} {'measure':21} {'workload':8} {'trials':>6} {'CV reps':>8} "
        f"{'+-90% CI':>9} {'DIFFERENT':>9} {'SAME':>5} {'UNKNOWN':>7} {'rounds':>6} "
        f"{'minutes':>7}"
    )
    print(header)
    for label, found in trials.items():
        for measure in [m + suffix for m in MEASURES for suffix in ESTIMATES]:
            for workload in PLANTED:
                cvs = [t.cv[(measure, workload)] for t in found if (measure, workload) in t.cv]
                if not cvs:
                    continue
                lead = (
                    f"{label:34} {measure:21} {workload:8} "
                    f"{len(cvs):6d} {statistics.mean(cvs) * 100:7.2f}%"
                )
                if workload == "base":
                    print(lead)
                    continue
                widths = [t.half_width[(measure, workload)] for t in found]
                decided = [t.decisions[(measure, workload)] for t in found]
                counts = {v: sum(d.verdict == v for d in decided) for v in (
                    "DIFFERENT", "SAME", UNKNOWN)}  # fmt: skip
                print(
                    f"{lead} {statistics.median(widths):8.2f}% "
                    f"{counts['DIFFERENT']:9d} {counts['SAME']:5d} {counts[UNKNOWN]:7d} "
                    f"{statistics.median(d.rounds for d in decided):6.1f} "
                    f"{max(d.minutes for d in decided):7.1f}"
                )


if __name__ == "__main__":
    main()
