"""Does telemetry change what it measures? The same engine with telemetry on and off, in one run.

One `oltplab run` of two engines made from the same binary (MySQL 8.0.31): `on` measured
with the default telemetry devices (the OS tools, the engine's counters, the session
summary), `off` with the load sampler alone (`telemetry = false`; the sampler runs either
way, it measures the server's CPU). The run alternates: both engines start once and stay
running, and each round measures one read-write cell (4 threads) on each, seconds apart,
the order turning from round to round, so a drifting host meets both alike. With
`--isolation on` (the default) the servers and sysbench run on CPUs of their own, and the
collectors beside sysbench.

Prints the ratio on/off of TPS and of the server's CPU per transaction, each with its 95%
interval paired by round, computed by oltplab's own comparison code; the more precise of
the two says how much telemetry costs.

    python bench/telemetry_overhead.py [--rounds 20] [--seconds 15] [--isolation on|off]
                                       [--keep DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tomli_w

from oltplab.analysis.dataset import load
from oltplab.analysis.estimate import PointSample, compare
from oltplab.analysis.points import Points
from oltplab.base.metrics import CPU_PER_TXN, TPS
from oltplab.spec.catalog import CATALOG

BINARY = "mysql-8.0.31"
ON, OFF = "telemetry-on", "telemetry-off"


def spec(rounds: int, seconds: int, isolation: bool) -> str:
    source = CATALOG[BINARY].source
    return tomli_w.dumps(
        {
            "name": "telemetry-overhead",
            "workloads": ["oltp_read_write"],
            "engines": [
                {"name": ON, "source": source},
                {"name": OFF, "source": source, "telemetry": False},
            ],
            "config": {"buffer_pool": "128M", "redo_capacity": "128M"},
            "dataset": {"tables": 2, "table_size": 10000},
            "protocol": {
                "warmup_ro_seconds": 10,
                "warmup_rw_seconds": 10,
                "warmup_threads": 4,
                "measure_seconds": seconds,
                "threads": [4],
                "repetitions": rounds,
                "order": "alternating",
                "isolation": isolation,
            },
        }
    )


def samples(results: Path, engine: str) -> dict[str, PointSample]:
    """Each measure's steady sample of the engine's one point (scenario, tier, engine,
    threads), by round, as the report cuts it."""
    dataset = load([results])
    found = {}
    for measure in (TPS, CPU_PER_TXN):
        chosen = Points(dataset, measure=measure).samples()
        (sample,) = (s for point, s in chosen.items() if point[2] == engine)
        found[measure.label] = sample
    return found


def _listed(sample: PointSample) -> str:
    return ", ".join(f"{m:.1f}" for m in sample.rep_means)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--isolation", choices=("on", "off"), default="on")
    parser.add_argument("--keep", type=Path, help="keep the results in this directory")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="oltplab-telemetry-overhead-"))
    work.mkdir(parents=True, exist_ok=True)
    spec_file, results = work / "overhead.toml", work / "results"
    spec_file.write_text(spec(args.rounds, args.seconds, args.isolation == "on"))
    started = time.monotonic()
    print(f"{args.rounds} rounds of {args.seconds} s cells on {ON} and {OFF} ...", flush=True)
    command = [sys.executable, "-m", "oltplab", "run", str(spec_file), "--results", str(results)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"oltplab run failed ({results}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    print(f"measured in {(time.monotonic() - started) / 60:.1f} min", flush=True)
    with_telemetry, without = samples(results, ON), samples(results, OFF)
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
    print(f"results in {results}; `oltplab report {results}` draws them")


if __name__ == "__main__":
    main()
