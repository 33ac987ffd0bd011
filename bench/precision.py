"""How precise is a comparison on this host, and does the stopping rule decide right?

Each trial is one real run per isolation setting (off, on; which goes first alternates),
each of one engine and four workloads measured in interleaved rounds: `base` and `aa`
(the same planted script with nothing planted: an A/A pair), `plus3` (5 extra point
selects per 10 transactions, about 3% more server work) and `plus7` (11 per 10, about 7%;
one point select is about 6% of an oltp_read_only transaction here). Every workload is
compared with `base`, paired by round.

For each measure (TPS, server CPU per transaction, server context switches per
transaction) the script prints the coefficient of variation between repetitions and the
half-width of the paired 90% interval after all rounds, and replays the stopping rule of
`oltplab run --precision` (analysis/precision.answers: DIFFERENT or SAME against the
margin from the fourth round on) on the rounds as they came: the verdict, and after how
many rounds and minutes of the trial it was reached. A trial has at most --rounds rounds
(about ten minutes of machine time each at the defaults).

    python bench/precision.py [--trials 10] [--rounds 6] [--margin 3] [--seconds 8]
                              [--isolation off,on] [--keep DIR]
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

from oltplab.analysis.dataset import load
from oltplab.analysis.points import Points
from oltplab.analysis.precision import MIN_ROUNDS, UNKNOWN, answers
from oltplab.base.metrics import MEASURES, Target

ENGINE = "mariadb-10.11.5"
SCRIPT = Path(__file__).parent / "workloads" / "planted_read_only.lua"
# One point select is about 6% of an oltp_read_only transaction's server work here.
PLANTED = {"base": 0, "aa": 0, "plus3": 5, "plus7": 11}


def spec(rounds: int, seconds: int, isolation: bool) -> str:
    workloads = ",\n".join(
        f'  {{ name = "{name}", script = "{SCRIPT}", read_only = true, '
        f"options = {{ planted_per_10 = {count} }} }}"
        for name, count in PLANTED.items()
    )
    return f"""
name = "precision"
workloads = [
{workloads}
]

[[engines]]
name = "{ENGINE}"

[config]
buffer_pool = "128M"

[dataset]
tables = 1
table_size = 10000

[protocol]
warmup_ro_seconds = 3
warmup_rw_seconds = 3
warmup_threads = 1
measure_seconds = {seconds}
threads = [1]
repetitions = {rounds}
order = "interleaved"
isolation = {str(isolation).lower()}
"""


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


def run_trial(
    work: Path, name: str, rounds: int, seconds: int, isolation: bool, margin: float
) -> Trial:
    results = work / name
    spec_file = work / f"{name}.toml"
    spec_file.write_text(spec(rounds, seconds, isolation))
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "oltplab", "run", str(spec_file), "--results", str(results)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"oltplab run failed ({results}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return judged(results, rounds, (time.monotonic() - started) / 60 / rounds, margin)


def judged(results: Path, rounds: int, per_round: float, margin: float) -> Trial:
    """Each measure's spread, interval and the stopping rule replayed round by round."""
    dataset = load([results])
    trial = Trial(per_round, {}, {}, {})
    for measure in MEASURES.values():
        points = Points(dataset, measure=measure)
        for point, sample in points.samples().items():
            means = sample.rep_means
            trial.cv[(measure.name, workload_of(point))] = float(means.std(ddof=1) / means.mean())
        target = Target(margin, measure)
        for answer in answers(points, target):
            trial.half_width[(measure.name, workload_of(answer.a))] = answer.half_width_pct or 0.0
        for k in range(MIN_ROUNDS, rounds + 1):
            for answer in answers(points, target, up_to=k):
                key = (measure.name, workload_of(answer.a))
                if key in trial.decisions:
                    continue
                if answer.verdict != UNKNOWN or k == rounds:
                    trial.decisions[key] = Decision(answer.verdict, k, k * per_round)
    return trial


def workload_of(point: tuple[str, str, str, int]) -> str:
    """The planted workload a point measured (its scenario is `<workload>-local`)."""
    return point[0].removesuffix("-local")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--margin", type=float, default=3.0)
    parser.add_argument("--isolation", default="on,off")
    parser.add_argument(
        "--contrast-trials",
        type=int,
        help="measure the second isolation setting in the first N trials only (default: all)",
    )
    parser.add_argument("--keep", type=Path, help="keep the results in this directory")
    parser.add_argument(
        "--summarise",
        type=Path,
        help="print the summary of the trials already in this directory (a --keep of an "
        "earlier run, at its --rounds and --margin) instead of measuring",
    )
    args = parser.parse_args()
    settings = [s == "on" for s in args.isolation.split(",")]
    if args.summarise is not None:
        summarise(earlier(args.summarise, args.rounds, args.margin), args)
        return
    work = args.keep or Path(tempfile.mkdtemp(prefix="oltplab-precision-"))
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "oltplab", "engines", "fetch", ENGINE],
        check=True,
        capture_output=True,
    )
    trials: dict[bool, list[Trial]] = defaultdict(list)
    started = time.monotonic()
    for number in range(1, args.trials + 1):
        chosen = settings
        if args.contrast_trials is not None and number > args.contrast_trials:
            chosen = settings[:1]
        order = chosen if number % 2 else chosen[::-1]
        for isolation in order:
            label = f"trial{number:02d}-isolation-{'on' if isolation else 'off'}"
            trial = run_trial(work, label, args.rounds, args.seconds, isolation, args.margin)
            trials[isolation].append(trial)
            said = ", ".join(
                f"{w} {d.verdict} ({d.rounds} rounds)"
                for (m, w), d in sorted(trial.decisions.items())
                if m == "cpu_us_per_txn"
            )
            tps = ", ".join(
                f"{w} {d.verdict}" for (m, w), d in sorted(trial.decisions.items()) if m == "tps"
            )
            print(
                f"{label}: {trial.minutes_per_round:.2f} min/round; CPU/txn: {said}; "
                f"TPS: {tps} ({(time.monotonic() - started) / 60:.0f} min)",
                flush=True,
            )
    summarise(trials, args)
    print(f"\nresults in {work}")


def earlier(work: Path, rounds: int, margin: float) -> dict[bool, list[Trial]]:
    """The trials an earlier run kept, minutes per round from when their cells ran."""
    trials: dict[bool, list[Trial]] = defaultdict(list)
    for results in sorted(work.glob("trial*-isolation-*/")):
        db = sqlite3.connect(results / "ledger.sqlite")
        first, last = db.execute("SELECT MIN(started_at), MAX(finished_at) FROM cells").fetchone()
        db.close()
        elapsed = datetime.fromisoformat(last) - datetime.fromisoformat(first)
        per_round = elapsed.total_seconds() / 60 / rounds
        trials[results.name.endswith("-on")].append(judged(results, rounds, per_round, margin))
    return trials


def summarise(trials: dict[bool, list[Trial]], args: argparse.Namespace) -> None:
    print()
    print(f"margin +-{args.margin:g}%, at most {args.rounds} rounds of {args.seconds} s cells")
    header = (
        f"{'isolation':9} {'measure':17} {'workload':8} {'trials':>6} {'CV reps':>8} "
        f"{'+-90% CI':>9} {'DIFFERENT':>9} {'SAME':>5} {'UNKNOWN':>7} {'rounds':>6} "
        f"{'minutes':>7}"
    )
    print(header)
    for isolation, found in trials.items():
        for measure in MEASURES:
            for workload in PLANTED:
                cvs = [t.cv[(measure, workload)] for t in found if (measure, workload) in t.cv]
                if not cvs:
                    continue
                lead = (
                    f"{'on' if isolation else 'off':9} {measure:17} {workload:8} "
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
