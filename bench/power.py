"""Error rates from real trials: how often does `oltplab run --margin M` call a planted
difference DIFFERENT, and an A/A pair DIFFERENT, on this host?

Each trial is one real search, `oltplab run SPEC --margin 1% --budget 15m`, in the order
and isolation a search uses by default (sliced rounds, isolated), of one engine and three
workloads compared with the first: `base`, `aa` (the same script, nothing planted: an A/A
pair) and `plusN` (about N% more server work per transaction: extra primary-key point
selects, bench/workloads/planted_read_only.lua). The trials' planted sizes (1, 2, 3 and 5%)
are drawn in a fixed shuffled order, so that a host that drifts over the hours spreads
over every size alike. Every trial is its own run: fresh servers, the dataset prepared
again.

Each trial keeps its rounds (each workload's per-round mean, when each round ended, which
were flagged) in TRIAL/trial.json; `--pack` gathers them, with host facts and dates, into
src/oltplab/plan/power_trials.json.gz, from which `--summarise`, the docs' plot and `oltplab
plan` read the curve (analysis/power.py): the rule replayed at the search's own looks (each
batch of rounds) for margins of 0.5%, 1% and 3%.

    python3 bench/power.py [--trials 30] [--keep DIR]      # measure (resumes in DIR)
    python3 bench/power.py --pack DIR                      # DIR's trials added to the package
    python3 bench/power.py --summarise [FILE.json.gz]      # the curve, no measuring
    python3 bench/power.py --before REV [--trials 6] [--keep DIR]   # two codes, side by side

With `--before REV`, each trial is measured twice, by the code of commit REV and by this
checkout's, one right after the other (which goes first alternates), without waiting for a
quiet host: the two see the host alike. Printed: per code, the trials decided (the search
stopped as every comparison was decided) and the median machine time (wall minutes of the
whole `oltplab run`, setup included) per decided trial. These trials are not packed.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from tiny_spec import planted_workloads, tiny_spec
from two_codes import codes

import oltplab
from oltplab.analysis.dataset import load
from oltplab.analysis.points import Points
from oltplab.analysis.power import PACKED, Trial, print_curve, read_trials, write_trials
from oltplab.base.metrics import TPS
from oltplab.store.ledger import Ledger
from oltplab.store.status import Status

ENGINE = "mariadb-10.11.5"
OLTPLAB = [sys.executable, "-m", "oltplab"]
# One extra point select per transaction is about 5.6% of an oltp_read_only transaction's
# TPS here (bench/precision.py: 50 per 100 transactions cost 2.8%). The sizes each trial
# really measured are in the curve's `measured` column, from the trials themselves.
PER_100 = {1: 18, 2: 36, 3: 54, 5: 89}
# Thirty trials: thirty A/A pairs, ten planted 2% and ten 3%, five 1% and five 5%.
SIZES = [2] * 10 + [3] * 10 + [1] * 5 + [5] * 5
MARGIN_PCT = 1.0
BUDGET_MINUTES = 15
CELL_SECONDS = 10
FIRST_BATCH = 4  # a search's first batch (and every later one) when the spec asks for fewer
THREADS = 1
# A trial waits for the host to go quiet (another process's load under this, the 1-minute
# average) for at most QUIET_WAIT_MINUTES, then runs anyway: the trials' flags say so.
QUIET_LOAD = 0.6
QUIET_WAIT_MINUTES = 30


def commit_measuring(source: Path = Path(oltplab.__file__).parent) -> str | None:
    """The commit of the oltplab this bench runs (or of the code in `source`), so that
    trials measured over several sessions say which code measured each."""
    done = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.stdout.strip() or None


COMMIT = commit_measuring()


def packed_trials() -> list[Trial]:
    """The trials packed so far, by this session or earlier ones."""
    return read_trials(PACKED) if PACKED.is_file() else []


def planted_sizes(trials: int) -> list[int]:
    """The planted size of each trial, in a fixed shuffled order (the same on every host)."""
    sizes = (SIZES * (trials // len(SIZES) + 1))[:trials]
    random.Random(48).shuffle(sizes)
    return sizes


def spec(size: int) -> str:
    workloads = planted_workloads({"base": 0, "aa": 0, f"plus{size}": PER_100[size]})
    return tiny_spec("power", [ENGINE], workloads, CELL_SECONDS, FIRST_BATCH, THREADS)


def wait_until_quiet() -> float:
    """Minutes waited for the host's load to fall under QUIET_LOAD."""
    started = time.monotonic()
    while os.getloadavg()[0] >= QUIET_LOAD:
        if time.monotonic() - started > QUIET_WAIT_MINUTES * 60:
            break
        time.sleep(20)
    return (time.monotonic() - started) / 60


@contextlib.contextmanager
def machine_to_ourselves(work: Path) -> Iterator[None]:
    """Held while a trial measures: other benches that share WORK's parent's lock
    (bench/sessions.py) take turns with it rather than load the host during a trial."""
    with (work.parent / "machine.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def run_trial(work: Path, number: int, size: int, source: Path | None = None) -> dict[str, object]:
    """One search; by the code in `source` (a `src` folder), without waiting for a quiet
    host, when given."""
    folder = work / f"trial{number:02d}-plus{size}"
    if folder.exists() and not (folder / "trial.json").exists():
        # A trial cut short (the bench stopped mid-search) starts again whole: resumed, its
        # machine time would be the resume's alone.
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    spec_file = folder / "spec.toml"
    spec_file.write_text(spec(size))
    env = os.environ | ({"PYTHONPATH": str(source)} if source else {})
    with machine_to_ourselves(work):
        waited = wait_until_quiet() if source is None else 0.0
        load_before = os.getloadavg()[0]
        started_at = datetime.now(UTC)
        started = time.monotonic()
        done = subprocess.run(
            [*OLTPLAB, "run", str(spec_file), "-r", str(folder / "results"), "--no-telemetry",
             "--margin", f"{MARGIN_PCT:g}%", "--budget", f"{BUDGET_MINUTES}m"],
            capture_output=True, text=True, check=False, env=env,
        )  # fmt: skip
        wall = (time.monotonic() - started) / 60
    (folder / "run.log").write_text(done.stdout + done.stderr)
    record = rounds_of(folder / "results", started_at)
    record.update(
        trial=number,
        planted_pct=size,
        planted_per_100=PER_100[size],
        started_at=started_at.isoformat(timespec="seconds"),
        wall_minutes=round(wall, 2),
        exit_status=done.returncode,
        waited_for_quiet_minutes=round(waited, 1),
        load_before=round(load_before, 2),
        margin_pct=MARGIN_PCT,
        budget_minutes=BUDGET_MINUTES,
        look_every=FIRST_BATCH,
        engine=ENGINE,
        oltplab_commit=COMMIT if source is None else commit_measuring(source),
        decided="every comparison decided" in " ".join(done.stdout.split()),
        cell_seconds=CELL_SECONDS,
        threads=THREADS,
    )
    (folder / "trial.json").write_text(json.dumps(record, indent=1) + "\n")
    return record


def rounds_of(results: Path, started_at: datetime) -> dict[str, object]:
    """Each workload's per-round TPS (the mean of its steady seconds, as the rule takes
    it), when each round ended, and which rounds were flagged."""
    points = Points(load([results]), measure=TPS)
    samples = points.samples()
    ledger = Ledger.open(results, create=False)
    try:
        done = [c for c in ledger.cells() if c.status is Status.DONE and c.finished_at]
    finally:
        ledger.close()
    rounds = max((c.repetition for c in done), default=0)
    ends = [0.0] * rounds
    flagged: dict[str, list[int]] = {}
    for cell in done:
        finished = datetime.fromisoformat(str(cell.finished_at))
        finished = finished if finished.tzinfo else finished.replace(tzinfo=UTC)
        ends[cell.repetition - 1] = max(
            ends[cell.repetition - 1], (finished - started_at).total_seconds() / 60
        )
        if cell.flags:
            flagged.setdefault(cell.scenario.removesuffix("-local"), []).append(cell.repetition)
    workloads: dict[str, list[float | None]] = {}
    labels: dict[str, str] = {}
    for point, sample in samples.items():
        name = point[0].removesuffix("-local")
        labels[name] = str(point)
        workloads[name] = [
            round(sample.rep_mean(r), 3) if r in sample.series else None
            for r in range(1, rounds + 1)
        ]
    run = json.loads((results / "run.json").read_text())
    host = run.get("host", {})
    return {
        "host": {k: host.get(k) for k in ("hostname", "cpu_model", "cores", "kernel")},
        "measure": "tps",
        "round_end_minutes": [round(e, 3) for e in ends],
        "workloads": workloads,
        "points": labels,
        "flagged_rounds": {k: sorted(v) for k, v in flagged.items()},
    }


def measure(work: Path, trials: int) -> None:
    subprocess.run([*OLTPLAB, "engines", "fetch", ENGINE], check=True, capture_output=True)
    started = time.monotonic()
    sizes = planted_sizes(trials)
    packed = {t.trial for t in packed_trials()}
    for number, size in enumerate(sizes, 1):
        if number in packed or (work / f"trial{number:02d}-plus{size}" / "trial.json").is_file():
            continue  # measured before this resume, in this folder or in an earlier session
        record = run_trial(work, number, size)
        spent = (time.monotonic() - started) / 60
        print(
            f"trial {number}/{trials} plus{size}: {record['wall_minutes']} min, "
            f"{len(record['round_end_minutes'])} rounds, exit {record['exit_status']} "  # type: ignore[arg-type]
            f"({spent:.0f} min in all)",
            flush=True,
        )
    print(f"\nresults in {work}; next: python3 bench/power.py --pack {work}")


def side_by_side(work: Path, before: str, trials: int) -> None:
    """Each trial by both codes, one after the other; the median wall time per decided trial
    of each."""
    sources = codes(before, work)
    found: dict[str, list[dict[str, object]]] = {name: [] for name in sources}
    for number, size in enumerate(planted_sizes(trials), 1):
        names = list(sources) if number % 2 else list(reversed(sources))
        for name in names:
            kept = work / name / f"trial{number:02d}-plus{size}" / "trial.json"
            if kept.is_file():
                record = json.loads(kept.read_text())
            else:
                record = run_trial(work / name, number, size, sources[name])
            found[name].append(record)
            print(f"trial {number} plus{size} {name}: {record['wall_minutes']} min, "
                  f"{len(record['round_end_minutes'])} rounds, "  # type: ignore[arg-type]
                  f"{'decided' if record['decided'] else 'undecided'}", flush=True)  # fmt: skip
    print("\ncode    trials  decided  median min per decided trial  (all trials' minutes)")
    for name, records in found.items():
        decided = [float(r["wall_minutes"]) for r in records if r["decided"]]  # type: ignore[arg-type]
        median = f"{statistics.median(decided):.2f}" if decided else "-"
        every = "/".join(f"{r['wall_minutes']}" for r in records)
        print(f"{name:7} {len(records):6}  {len(decided):7}  {median:>28}  ({every})")
    tree = sources["before"].parent
    print(f"\ntrials in {work}; remove the worktree with: git worktree remove {tree}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=len(SIZES))
    parser.add_argument("--keep", type=Path, default=Path("power-trials"))
    parser.add_argument("--pack", type=Path, help="gather DIR's trials into " + str(PACKED))
    parser.add_argument("--summarise", nargs="?", const=PACKED, type=Path)
    parser.add_argument("--before", help="measure by this commit's code and this checkout's")
    args = parser.parse_args()
    if args.before is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        side_by_side(args.keep.resolve(), args.before, args.trials)
        return
    if args.pack is not None:
        # Trials packed in earlier sessions stay; one measured again in DIR replaces its own.
        trials = {t.trial: t.model_dump(mode="json") for t in packed_trials()}
        found = [json.loads(p.read_text()) for p in sorted(args.pack.glob("trial*/trial.json"))]
        trials.update({int(t["trial"]): t for t in found})
        write_trials([trials[n] for n in sorted(trials)], PACKED, measured_on=platform.node())
        print(f"{len(found)} trials from {args.pack}, {len(trials)} in all, into {PACKED}")
        print_curve(read_trials(PACKED))
        return
    if args.summarise is not None:
        print_curve(read_trials(args.summarise))
        return
    args.keep.mkdir(parents=True, exist_ok=True)
    measure(args.keep.resolve(), args.trials)


if __name__ == "__main__":
    main()
