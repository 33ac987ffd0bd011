"""Does telemetry change what it measures? TPS with telemetry on against off, interleaved.

Runs the same read-write cell (MySQL 8.0.31, 4 threads, 30 s) 5 times with the OS
collectors and the engine probe on and 5 times with `--no-telemetry`, alternating which
goes first in each round (on/off, off/on, ...) so a drifting host hits both alike; with
`--isolation on` (the default) the server and sysbench run on CPUs of their own, as
`[protocol] isolation` puts them, and the collectors run beside sysbench. Each
round adds one repetition to each results directory through the real CLI, so every
measurement restores the datadir snapshot, starts the engine and warms up as usual.
Prints the ratio on/off of TPS and of the server's CPU per transaction (the load sampler
runs either way), each with its 95% interval (paired by round), computed by oltplab's own
comparison code; the more precise of the two says how much telemetry costs.

    python bench/telemetry_overhead.py [--rounds 5] [--seconds 30] [--isolation on|off]
                                       [--keep DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from oltplab.analysis.dataset import load
from oltplab.analysis.estimate import PointSample, compare
from oltplab.analysis.points import Points
from oltplab.base.metrics import CPU_PER_TXN, TPS

ENGINE = "mysql-8.0.31"


def spec(repetitions: int, seconds: int, isolation: bool) -> str:
    return f"""
name = "telemetry-overhead"
workloads = ["oltp_read_write"]

[[engines]]
name = "{ENGINE}"

[config]
buffer_pool = "128M"
redo_capacity = "128M"

[dataset]
tables = 2
table_size = 10000

[protocol]
warmup_ro_seconds = 10
warmup_rw_seconds = 10
warmup_threads = 4
measure_seconds = {seconds}
threads = [4]
repetitions = {repetitions}
isolation = {str(isolation).lower()}
"""


def run(
    work: Path, results: Path, telemetry: bool, repetitions: int, seconds: int, isolation: bool
) -> None:
    spec_file = work / f"round{repetitions}.toml"
    spec_file.write_text(spec(repetitions, seconds, isolation))
    command = [sys.executable, "-m", "oltplab", "run", str(spec_file), "--results", str(results)]
    if not telemetry:
        command.append("--no-telemetry")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"oltplab run failed ({results}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")


def samples(results: Path) -> dict[str, PointSample]:
    """Each measure's steady sample of the one point, by repetition, as the report cuts it."""
    dataset = load([results])
    found = {}
    for measure in (TPS, CPU_PER_TXN):
        (sample,) = Points(dataset, measure=measure).samples().values()
        found[measure.label] = sample
    return found


def _listed(sample: PointSample) -> str:
    return ", ".join(f"{m:.1f}" for m in sample.rep_means)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--isolation", choices=("on", "off"), default="on")
    parser.add_argument("--keep", type=Path, help="keep the results in this directory")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="oltplab-telemetry-overhead-"))
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "oltplab", "engines", "fetch", ENGINE],
        check=True,
        capture_output=True,
    )
    on, off = work / "telemetry-on", work / "telemetry-off"
    started = time.monotonic()
    for round_ in range(1, args.rounds + 1):
        order = [(on, True), (off, False)] if round_ % 2 else [(off, False), (on, True)]
        for results, telemetry in order:
            run(work, results, telemetry, round_, args.seconds, args.isolation == "on")
        print(f"round {round_}/{args.rounds} done ({time.monotonic() - started:.0f} s)", flush=True)
    with_telemetry, without = samples(on), samples(off)
    widths = {}
    for label, sample_on in with_telemetry.items():
        sample_off = without[label]
        result = compare(sample_on, sample_off, paired=True, label=f"telemetry {label}")
        print(f"{label} with telemetry, by round:    {_listed(sample_on)}")
        print(f"{label} without telemetry, by round: {_listed(sample_off)}")
        ratio = result.ratio()
        if ratio.low is None or ratio.high is None:
            print(f"{label} ratio on/off = {ratio.point:.3f}, no interval ({result.verdict})")
            continue
        widths[label] = (ratio.high - ratio.low) / 2
        print(
            f"{label} ratio on/off = {ratio.point:.3f}, 95% interval [{ratio.low:.3f}, "
            f"{ratio.high:.3f}] (+-{widths[label] * 100:.1f}%; {result.method}, "
            f"n={result.n}): {result.verdict}"
        )
    if widths:
        best = min(widths, key=widths.__getitem__)
        print(f"the more precise: {best}, +-{widths[best] * 100:.1f}%")
    print(f"results in {work}")


if __name__ == "__main__":
    main()
