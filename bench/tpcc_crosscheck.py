"""The tpcc kind cross-checked against go-tpc: do two TPC-C-like drivers rank two engines
the same way?

Builds go-tpc (github.com/pingcap/go-tpc v1.0.7, MySQL family only) with the Go toolchain
into oltplab's cache, once. Then, on the same engines, warehouses, threads, warm-up,
measure seconds and buffer pool:
  - oltplab: a spec with one `tpcc` workload, run by `python3 -m oltplab run`; NOPM per
    engine and repetition read from the ledger's cell_metrics;
  - go-tpc: each engine started here as oltplab starts a private instance (its option file
    from the same spec tier), `go-tpc tpcc prepare`, a warm-up run, then one run per
    repetition; the New-Order figure (go-tpc calls it tpmC) and the transactions read from
    its final summary.
Prints each driver's figures per engine, the ratio engine 2 / engine 1 by each driver, and
whether both rank the engines the same way ("undecided" where a driver's repetitions of
the two engines overlap). go-tpc's figures stay in their own text files: nothing of them
enters a ledger.

    python3 bench/tpcc_crosscheck.py [--engines mysql-8.0.31 mariadb-10.11.5]
        [--warehouses 2] [--threads 4] [--seconds 60] [--warmup 10]
        [--buffer-pool 512M] [--repetitions 1] [--results DIR]

Time, on a busy 2-core machine with the engines already fetched and go-tpc built: 7 min
14 s at the defaults; 11 min 14 s and 11 min 24 s with --repetitions 2 (two go-tpc loads
and six go-tpc runs, then oltplab's two loads and four cells). Building go-tpc the first
time took 1 min 32 s, module downloads included.

Limits: go-tpc 1.0.7 takes a password only as -p on its command line (no environment
variable, no option file), where other users of the machine could read it. So its user has
none: its instance lives for this run only, listens on 127.0.0.1 on a port of its own, and
the user's rights cover its one database. go-tpc has no warm-up of its own: a first run of
--warmup seconds stands for it, and is not counted. Its post-load consistency checks are
skipped (--no-check): on MySQL 8.0.31 one of them ran for minutes at one warehouse. It
runs with --ignore-error: a failed transaction is counted (under NEW_ORDER_ERR and the
like) and its terminal goes on, where without it the terminal would stop. go-tpc counts
the New-Orders it rolls back on purpose (about 1 in 100, as the specification asks) among
those done; oltplab's NOPM counts committed ones only. The two drivers are different
programs (go-tpc through Go's MySQL driver and server-side prepared statements, oltplab
through sysbench's Lua), so their absolute figures need not agree; the ranking and the
ratio are what is compared.
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from oltplab.base.wire import MYSQL
from oltplab.engines.cache import cache_root
from oltplab.engines.config import extra_settings
from oltplab.engines.families import intent_settings, option_file
from oltplab.engines.hosts import free_port
from oltplab.engines.provision import local_instance
from oltplab.engines.supplier import supply
from oltplab.spec import Spec, parse_spec
from oltplab.store.directory import LEDGER

GO = "/usr/local/go/bin/go"
GO_TPC = "github.com/pingcap/go-tpc/cmd/go-tpc"
GO_TPC_VERSION = "v1.0.7"
USER = "tpcc"
DATABASE = "sbtest"  # the one database oltplab's benchmark user is granted
TIMEOUT = 300
# go-tpc's final lines: "[Summary] NEW_ORDER - Takes(s): 60.0, Count: 1234, TPM: 1234.0, ..."
# (an op's failures under NEW_ORDER_ERR) and "tpmC: 1234.0, efficiency: 4798.0%".
SUMMARY = re.compile(r"^\[Summary\] (\w+)\s+- Takes\(s\): ([\d.]+), Count: (\d+),", re.M)
TPMC = re.compile(r"^tpmC: ([\d.]+),", re.M)
# What each driver's New-Order figure is called here (go-tpc's own name, tpmC, is TPC-C's
# audited metric, which neither driver measures).
FIGURE = {"oltplab": "NOPM", "go-tpc": "New-Orders/min"}


def tool_root() -> Path:
    return cache_root() / "tools" / f"go-tpc-{GO_TPC_VERSION}"


def build_go_tpc() -> Path:
    """go-tpc's binary, built once; the module, build caches and Go's own settings and
    telemetry all kept in oltplab's cache, nothing in the home folder."""
    root = tool_root()
    binary = root / "bin" / "go-tpc"
    if binary.is_file():
        return binary
    print(f"building go-tpc {GO_TPC_VERSION} into {root} (a minute or two, once)", flush=True)
    env = {
        **os.environ,
        "GOBIN": str(root / "bin"),
        "GOPATH": str(root / "gopath"),
        "GOMODCACHE": str(root / "gopath" / "pkg" / "mod"),
        "GOCACHE": str(root / "gocache"),
        "XDG_CONFIG_HOME": str(root / "config"),  # go env's file and telemetry counters
        "GOTOOLCHAIN": "local",
        "GOFLAGS": "-buildvcs=false",
    }
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [GO, "install", f"{GO_TPC}@{GO_TPC_VERSION}"], cwd=root, env=env, check=True, timeout=1800
    )
    return binary


def spec_text(args: argparse.Namespace) -> str:
    engines = "".join(f'\n[[engines]]\nname = "{name}"\n' for name in args.engines)
    return f"""name = "tpcc-crosscheck"
workloads = [{{ name = "tpcc", kind = "tpcc" }}]
{engines}
[config]
redo_capacity = "256M"

[[tiers]]
name = "{args.buffer_pool}"
buffer_pool = "{args.buffer_pool}"

[dataset]
warehouses = {args.warehouses}

[protocol]
warmup_ro_seconds = 0
warmup_rw_seconds = {args.warmup}
warmup_threads = {args.threads}
measure_seconds = {args.seconds}
threads = [{args.threads}]
repetitions = {args.repetitions}
"""


@dataclass(frozen=True)
class Figures:
    """One driver's New-Orders per minute for one engine, a value per repetition, and its
    transactions a second of every type (the context: NOPM is one type's share)."""

    new_orders_per_min: list[float]
    transactions_per_s: list[float]


def run_oltplab(spec_path: Path, results: Path, output: Path) -> dict[str, Figures]:
    with output.open("w") as sink:
        done = subprocess.run(
            [sys.executable, "-m", "oltplab", "run", str(spec_path), "--results", str(results)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if done.returncode != 0:
        raise SystemExit(f"oltplab run failed ({done.returncode}): see {output}")
    ledger = sqlite3.connect(f"file:{results / LEDGER}?mode=ro", uri=True)
    try:
        rows = ledger.execute(
            "SELECT c.engine, m.value, s.tps FROM cell_metrics m"
            " JOIN cells c ON c.id = m.cell_id JOIN summaries s ON s.cell_id = c.id"
            " WHERE m.metric = 'nopm' AND c.status = 'done' ORDER BY c.engine, c.repetition"
        ).fetchall()
    finally:
        ledger.close()
    figures: dict[str, Figures] = {}
    for engine, nopm, tps in rows:
        found = figures.setdefault(engine, Figures([], []))
        found.new_orders_per_min.append(float(nopm))
        found.transactions_per_s.append(float(tps))
    return figures


def flagged(results: Path) -> str | None:
    """What oltplab flagged in its cells (other load on the machine, say), which go-tpc's
    runs, measured the same way in between, have no check for."""
    ledger = sqlite3.connect(f"file:{results / LEDGER}?mode=ro", uri=True)
    try:
        flags = [str(f) for (f,) in ledger.execute("SELECT flags FROM cells").fetchall()]
    finally:
        ledger.close()
    said = sorted({flag for f in flags for flag in f.split(",") if flag})
    if not said:
        return None
    marked = sum(1 for f in flags if f)
    return (
        f"oltplab flagged {marked} of {len(flags)} cells ({', '.join(said)}; the cells' notes"
        f" in `oltplab report {results}`); go-tpc's runs have no such check"
    )


def go_tpc_summary(text: str) -> tuple[float, float]:
    """go-tpc's New-Orders a minute and its committed transactions a second."""
    tpmc = TPMC.search(text)
    counted = [(op, float(took), int(n)) for op, took, n in SUMMARY.findall(text)]
    if tpmc is None or not counted:
        raise ValueError("no final summary in go-tpc's output")
    done = [(took, n) for op, took, n in counted if not op.endswith("_ERR")]
    return float(tpmc.group(1)), sum(n for _, n in done) / max(took for took, _ in done)


def run_go_tpc(
    binary: Path, spec: Spec, name: str, args: argparse.Namespace, folder: Path
) -> Figures:
    """The engine started from the spec's tier, loaded by go-tpc, warmed up and measured;
    each step's output kept in the folder."""
    distribution = supply(spec.engine(name))
    instance = local_instance(distribution, folder / "instance")
    if instance.client_protocol != MYSQL:
        raise SystemExit(f"{name}: go-tpc drives the MySQL family only")
    instance.prepare_folders()
    port = free_port()
    family, version = distribution.family, distribution.version
    tier = spec.tier_list[0]
    tunables = intent_settings(family, version, spec.resolve(tier)) + extra_settings(
        spec.engine(name).extra
    )
    instance.write_option_file(
        option_file(family, version, name, tier.name, instance.paths(port), tunables)
    )
    instance.initialise(timeout=TIMEOUT)
    instance.allow_clients(("%",))
    instance.start(port, timeout=TIMEOUT)
    try:
        with instance.control() as control:
            # Every other account dropped first (none may be left without a password), then
            # go-tpc's, with none: go-tpc would show it in the process list (see Limits).
            control.secure_accounts(USER)
            control.create_benchmark_user(USER, "", clients=("%",))
        common = ["-H", instance.host, "-P", str(port), "-U", USER, "-D", DATABASE]
        common += ["--warehouses", str(args.warehouses), "-T", str(args.threads)]

        def step(label: str, *extra: str, timeout: float) -> str:
            print(f"{name}: go-tpc {label}", flush=True)
            output = folder / f"go-tpc-{label}.txt"
            with output.open("w") as sink:
                done = subprocess.run(
                    [str(binary), "tpcc", *extra, *common],
                    cwd=folder,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    timeout=timeout,
                    check=False,
                )
            text = output.read_text()
            if done.returncode != 0 or "check prepare failed" in text:
                raise SystemExit(f"{name}: go-tpc {label} failed: see {output}")
            return text

        step("prepare", "prepare", "--no-check", timeout=TIMEOUT * args.warehouses)
        if args.warmup:
            step("warmup", "run", "--time", f"{args.warmup}s", "--ignore-error", timeout=TIMEOUT)
        figures = Figures([], [])
        for repetition in range(1, args.repetitions + 1):
            window = ["--time", f"{args.seconds}s", "--ignore-error"]
            text = step(f"run-{repetition}", "run", *window, timeout=args.seconds + TIMEOUT)
            new_orders, tps = go_tpc_summary(text)
            figures.new_orders_per_min.append(new_orders)
            figures.transactions_per_s.append(tps)
        return figures
    finally:
        instance.stop(timeout=TIMEOUT)
        instance.discard_datadir()  # the loaded tables; the server's log stays


def ranking(first: list[float], second: list[float]) -> str:
    """How engine 2 ranks against engine 1: 'higher' or 'lower' when all its repetitions lie
    above or below engine 1's, else 'undecided' (their ranges overlap)."""
    if min(second) > max(first):
        return "higher"
    if max(second) < min(first):
        return "lower"
    return "undecided"


def shown(values: list[float]) -> str:
    return " / ".join(f"{v:,.0f}" for v in values)


def report(engines: list[str], drivers: dict[str, dict[str, Figures]]) -> None:
    """A row per engine: each driver's New-Orders a minute, then its transactions a second
    of every type; a line per driver with its ratio and ranking; the verdict."""
    first, second = engines
    columns = [f"{d} {FIGURE[d]}" for d in drivers] + [f"{d} tx/s" for d in drivers]
    rows = [
        [engine]
        + [shown(f[engine].new_orders_per_min) for f in drivers.values()]
        + [shown(f[engine].transactions_per_s) for f in drivers.values()]
        for engine in engines
    ]
    widths = [max(len(r[i]) for r in [["engine", *columns], *rows]) for i in range(len(rows[0]))]
    for row in [["engine", *columns], *rows]:
        print(
            "  ".join(
                cell.ljust(w) if i == 0 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    verdicts = {}
    for driver, figures in drivers.items():
        a, b = figures[first].new_orders_per_min, figures[second].new_orders_per_min
        verdicts[driver] = ranking(a, b)
        ratio = statistics.mean(b) / statistics.mean(a)
        print(f"{driver}: {second} / {first} = {ratio:.3f}; {second} ranks {verdicts[driver]}")
    if len(next(iter(drivers.values()))[first].new_orders_per_min) < 2:
        print("(one repetition each: no measure of the noise; --repetitions 2 gives one)")
    undecided = [driver for driver, said in verdicts.items() if said == "undecided"]
    if undecided:
        print(f"undecided: {', '.join(undecided)} repetitions of the two engines overlap")
    elif len(set(verdicts.values())) == 1:
        print("both drivers rank the engines the same way")
    else:
        print("the drivers disagree on the ranking")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", nargs=2, default=["mysql-8.0.31", "mariadb-10.11.5"])
    parser.add_argument("--warehouses", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=int, default=60, help="measure seconds")
    parser.add_argument("--warmup", type=int, default=10, help="warm-up seconds")
    parser.add_argument("--buffer-pool", default="512M")
    parser.add_argument("--repetitions", type=int, default=1)
    parser.add_argument("--results", type=Path, help="a new folder for the raw outputs")
    args = parser.parse_args()
    results = args.results or Path(tempfile.mkdtemp(prefix="tpcc-crosscheck-"))
    results.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    binary = build_go_tpc()
    text = spec_text(args)
    spec_path = results / "crosscheck.toml"
    spec_path.write_text(text)
    spec = parse_spec(text, str(spec_path))
    go_tpc: dict[str, Figures] = {}
    for name in args.engines:
        folder = results / "go-tpc" / name
        folder.mkdir(parents=True, exist_ok=True)
        go_tpc[name] = run_go_tpc(binary, spec, name, args, folder)
    print("oltplab run (tpcc kind)", flush=True)
    ours = run_oltplab(spec_path, results / "oltplab", results / "oltplab-run.txt")
    missing = [name for name in args.engines if name not in ours]
    if missing:
        raise SystemExit(f"no NOPM in the ledger for {', '.join(missing)}")
    print(
        f"\n{args.warehouses} warehouses, {args.threads} threads, {args.seconds} s measured,"
        f" buffer pool {args.buffer_pool}; a figure per repetition (tx/s: every type)"
    )
    report(args.engines, {"oltplab": ours, "go-tpc": go_tpc})
    if said := flagged(results / "oltplab"):
        print(said)
    print(f"\nwall time {time.monotonic() - started:.0f} s; raw outputs in {results}")


if __name__ == "__main__":
    main()
