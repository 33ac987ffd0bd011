"""The report as Markdown: the reference report's sections, computed from the data."""

from __future__ import annotations

import json
import tomllib
from collections import defaultdict
from pathlib import Path
from typing import Any

from oltplab.analysis.dataset import Dataset
from oltplab.analysis.tables import (
    Grid,
    Value,
    cross_family,
    differences,
    findings,
    flagged,
    grids,
    network_latency,
    pairwise,
    progression,
    relative,
    repetitions,
    stability,
)
from oltplab.analysis.telemetry import notable_cells, operation_table, timeline
from oltplab.compare import INCONCLUSIVE, Comparison
from oltplab.plan import safe_name
from oltplab.report import ReportOptions
from oltplab.report.charts import telemetry_chart_name
from oltplab.report.format import (
    CROSS_FAMILY,
    describe_workload,
    number,
    percent,
    scenario_title,
    setting,
    without_html,
)

METRIC_TITLES = {
    "tps": "TPS",
    "qps": "QPS",
    "lat_p95_ms": "p95 latency (ms)",
    "lat_avg_ms": "average latency (ms)",
    "lat_max_ms": "max latency (ms)",
}
# Settings that decide an OLTP result; the redo capacity is derived from whichever
# variables the version has.
KEY_SETTINGS = (
    "innodb_buffer_pool_size",
    "innodb_buffer_pool_instances",
    "redo capacity",
    "innodb_flush_log_at_trx_commit",
    "log_bin",
    "sync_binlog",
    "binlog_format",
    "binlog_row_image",
    "innodb_doublewrite",
    "innodb_io_capacity",
    "innodb_io_capacity_max",
    "innodb_flush_method",
    "max_connections",
    "character_set_server",
    "collation_server",
    "performance_schema",
    "query_cache_type",
    "thread_handling",
    "innodb_change_buffering",
    "innodb_adaptive_hash_index",
    "transaction_isolation",
    "tx_isolation",
    # PostgreSQL's own names for the intent (buffer pool, redo, durability, torn pages, log)
    "shared_buffers",
    "max_wal_size",
    "synchronous_commit",
    "fsync",
    "full_page_writes",
    "wal_level",
    "checkpoint_timeout",
    "server_encoding",
)


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    def escape(cell: str) -> str:
        return cell.replace("|", "\\|").replace("\n", " ")

    lines = [
        "| " + " | ".join(escape(h) for h in header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    lines += ["| " + " | ".join(escape(c) for c in row) + " |" for row in rows]
    return lines + [""]


def with_interval(versus: Comparison | None, diff: float | None = None) -> str:
    """-20.2% [-23.1, -17.0]; the interval is left out when there is none."""
    if versus is None:
        return percent(diff)
    if versus.verdict == INCONCLUSIVE:
        return f"{percent(versus.diff_pct)} (too few samples)"
    return f"{percent(versus.diff_pct)} {versus.interval()}"


def verdict(versus: Comparison | None) -> str:
    return "-" if versus is None else versus.verdict


def mark(value: Value | None, formatted: str) -> str:
    return f"{formatted} †" if value is not None and value.flags else formatted


def redo_capacity(values: dict[str, str]) -> str | None:
    if values.get("innodb_redo_log_capacity"):
        return values["innodb_redo_log_capacity"]
    size, files = values.get("innodb_log_file_size"), values.get("innodb_log_files_in_group", "1")
    if size and size.isdigit() and files.isdigit():
        return str(int(size) * int(files))
    return size


def effective(values: dict[str, str], name: str) -> str | None:
    return redo_capacity(values) if name == "redo capacity" else values.get(name)


# --- sections ----------------------------------------------------------------------------------


def _environment(dataset: Dataset) -> list[str]:
    out = ["## 1. Environment and provenance", ""]
    for run in dataset.runs:
        if "imported_from" in run:
            out.append(
                f"- `{run['results']}`: imported from `{run['imported_from']}` "
                f"({run['started_at']})"
            )
            continue
        host = run.get("host", {})
        memory = host.get("memory_bytes", 0) / 1024**3
        out.append(
            f"- `{run['results']}`: run of {run['started_at']} ({run['status']}); host "
            f"{host.get('hostname', '?')}, {host.get('cpu_model', '?')}, "
            f"{host.get('cores', '?')} cores, {memory:.1f} GiB, kernel {host.get('kernel', '?')}; "
            f"sysbench {run.get('sysbench', '?')}, oltplab {run.get('oltplab', '?')}"
        )
    out += _run_records(dataset)
    out.append("")
    rows = [
        [
            e.name,
            e.family,
            e.version,
            e.server_version,
            (e.binary_sha256 or "-")[:16],
            _source(e.source),
        ]
        for e in (dataset.engines[n] for n in dataset.engine_names())
    ]
    out += table(
        ["engine", "family", "version", "SELECT VERSION()", "binary sha256", "source"], rows
    )
    if dataset.workloads:
        out += table(
            ["workload", "runs", "rows picked", "options"],
            [
                [
                    name,
                    describe_workload("", {k: v for k, v in facts.items() if k not in _PICKING}),
                    _picking(facts),
                    ", ".join(f"{k}={v}" for k, v in facts.get("options", {}).items()) or "-",
                ]
                for name, facts in dataset.workloads.items()
            ],
        )
    for text in dataset.specs:
        try:
            spec: dict[str, Any] = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            continue
        dataset_part = spec.get("dataset", {})
        protocol = spec.get("protocol", {})
        out.append(
            f"Dataset: {dataset_part.get('tables', 20)} tables x "
            f"{number(dataset_part.get('table_size', 5_000_000))} rows, "
            f"rand-type {dataset_part.get('rand_type', 'uniform')}. "
            f"Protocol: warm-up A {protocol.get('warmup_ro_seconds', 180)} s read-only, "
            f"warm-up B {protocol.get('warmup_rw_seconds', 600)} s read-write (not for "
            f"read-only workloads), {protocol.get('measure_seconds', 900)} s per "
            f"measurement, {protocol.get('repetitions', 1)} repetition(s), order "
            f"{protocol.get('order', 'as-listed')}."
        )
        out.append("")
    return out


_PICKING = ("rand_type", "rand_pareto_h", "options", "position")


def _picking(facts: dict[str, Any]) -> str:
    pareto_h = facts.get("rand_pareto_h")
    return str(facts.get("rand_type", "uniform")) + (f" (h={pareto_h})" if pareto_h else "")


def _run_records(dataset: Dataset) -> list[str]:
    """What each results directory's run.json adds: host tuning, disks, reruns."""
    out = []
    for results, record in dataset.run_records.items():
        host = record.get("host", {})
        sysbench = record.get("sysbench", {})
        disks = {
            f"{d.get('device', '?')} {d.get('filesystem', '?')}"
            + (" rotational" if d.get("rotational") else "")
            for e in record.get("engines", {}).values()
            if (d := e.get("datadir_disk"))
        }
        out.append(
            f"- `{results}` (run.json): CPU governor {host.get('cpu_governor', '?')}, "
            f"transparent huge pages {host.get('transparent_hugepages', '?')}, swappiness "
            f"{host.get('swappiness', '?')}; datadir on {', '.join(sorted(disks)) or '-'}; "
            f"sysbench sha256 {str(sysbench.get('sha256', '?'))[:16]}, "
            f"{len(sysbench.get('scripts', {}))} Lua scripts hashed; telemetry "
            f"{'on' if record.get('telemetry', True) else 'off'}"
        )
        for engine, link in record.get("links", {}).items():
            out.append(
                f"  - link to {engine}: round trip {link.get('rtt_ms', '?')} ms measured, "
                f"shaping: {link.get('shaping') or 'none'}"
            )
        if "rerun_of" in record:
            found = record.get("differences", [])
            out.append(
                f"  - rerun of `{record['rerun_of'].get('results')}`: "
                + ("; ".join(found) if found else "same host, sysbench and engine binaries")
            )
    return out


def _source(text: str) -> str:
    try:
        source = json.loads(text)
    except json.JSONDecodeError:
        return text
    return "; ".join(f"{k}: {v}" for k, v in source.items() if k != "password_env")


def _configuration(dataset: Dataset) -> list[str]:
    out = ["## 2. Configuration", ""]
    if not dataset.variables:
        return out + ["No server variables were recorded for these results.", ""]
    differing: list[list[str]] = []
    for tier in dataset.tiers():
        engines = [e for e in dataset.engine_names() if (e, tier) in dataset.variables]
        if not engines:
            continue
        out += [f"### Tier {tier}", ""]
        rows = []
        for name in KEY_SETTINGS:
            values = [effective(dataset.variables[(e, tier)], name) for e in engines]
            if all(v is None for v in values):
                continue
            shown = [setting(name, v) for v in values]
            differs = len({s for s in shown if s != "-"}) > 1
            rows.append([f"**{name}**" if differs else name, *shown])
            if differs:
                differing.append(
                    [tier, name, *(f"{e}: {s}" for e, s in zip(engines, shown, strict=True))]
                )
        out += table(["setting", *engines], rows)
    out += ["### Settings that differ between engines", ""]
    if differing:
        out.append(
            "Bold settings above differ between engines of the same tier; a comparison "
            "across them measures the configuration as well as the engine."
        )
        out.append("")
        out += table(
            ["tier", "setting", "values"], [[r[0], r[1], "; ".join(r[2:])] for r in differing]
        )
    else:
        out += ["None: every recorded key setting is equal across engines.", ""]
    return out


def _grid(grid: Grid, failed: set[tuple[str, str, str, int]]) -> list[str]:
    def shown(engine: str, threads: int, value: Value | None) -> str:
        if value is not None:
            return mark(value, number(value.value))
        return "failed" if (grid.scenario, grid.tier, engine, threads) in failed else "-"

    rows = [
        [engine, *(shown(engine, t, v) for t, v in zip(grid.threads, values, strict=True))]
        for engine, values in grid.rows
    ]
    return table(["Engine", *(f"{t}t" for t in grid.threads)], rows)


def _results(dataset: Dataset) -> list[str]:
    out = [
        "## 3. Results by scenario and tier",
        "",
        "† marks a value with a validity flag (see section 10).",
        "",
    ]
    if kinds := cross_family(dataset, dataset.engine_names()):
        out += [CROSS_FAMILY.format(kinds=kinds), ""]
    by_metric = {m: {(g.scenario, g.tier): g for g in grids(dataset, m)} for m in METRIC_TITLES}
    failed = {
        (c.scenario, c.tier, c.engine, c.threads) for c in dataset.cells if c.status == "failed"
    }
    for scenario in dataset.scenarios:
        out += [f"### {scenario_title(scenario, dataset.workloads)}", ""]
        for tier in dataset.tiers(scenario):
            for metric, title in METRIC_TITLES.items():
                grid = by_metric[metric].get((scenario, tier))
                if grid and grid.rows:
                    out += [f"**{title} by thread count, tier {tier} ({scenario})**", ""]
                    out += _grid(grid, failed)
    return out


def _progression(dataset: Dataset, options: ReportOptions) -> list[str]:
    rows = progression(dataset, options.baselines)
    out = ["## 4. Version progression", ""]
    if not rows:
        return out + ["No family has more than one version in these results.", ""]
    grouped: dict[tuple[str, str, str], list[Any]] = defaultdict(list)
    for row in rows:
        grouped[(row.family, row.scenario, row.tier)].append(row)
    for (family, scenario, tier), members in grouped.items():
        base = members[0].baseline_engine
        threads = sorted({r.threads for r in members})
        out += [f"**{family}, tier {tier}, {scenario}: baseline {base}**", ""]
        base_tps = {r.threads: r.baseline_tps for r in members}
        lines = [[f"{base} (TPS)", *(number(base_tps.get(t)) for t in threads)]]
        for engine in dict.fromkeys(r.engine for r in members):
            mine = {r.threads: r for r in members if r.engine == engine}
            lines.append(
                [f"{engine} (TPS)", *(number(mine[t].tps) if t in mine else "-" for t in threads)]
            )
            lines.append(
                [
                    f"vs {base}",
                    *(
                        with_interval(mine[t].comparison, mine[t].diff_pct) if t in mine else "-"
                        for t in threads
                    ),
                ]
            )
            lines.append(
                ["verdict", *(verdict(mine[t].comparison) if t in mine else "-" for t in threads)]
            )
        out += table(["Engine", *(f"{t}t" for t in threads)], lines)
    return out


def _differences(dataset: Dataset, options: ReportOptions) -> list[str]:
    rows = differences(progression(dataset, options.baselines), options.threshold)
    out = [
        f"## 5. All significant differences greater than {options.threshold:g}% versus the "
        "baseline",
        "",
        "Only differences whose 95% interval excludes zero are listed; "
        + (
            f"a no-change comparison on this host spans ±{options.noise_floor:.1f}% "
            "(`oltplab calibrate`)."
            if options.noise_floor is not None
            else "no noise floor was measured on this host (`oltplab calibrate ENGINE`)."
        ),
        "",
    ]
    if not rows:
        return out + [f"No significant difference beyond {options.threshold:g}%.", ""]
    for scenario in dataset.scenarios:
        mine = [r for r in rows if r.scenario == scenario]
        if mine:
            out += [f"### {scenario_title(scenario, dataset.workloads)}", ""]
            out += table(
                [
                    "Comparison",
                    "Tier",
                    "Thread count",
                    "Difference vs baseline [95% interval]",
                    "n",
                ],
                [
                    [
                        f"{r.engine} vs {r.baseline_engine}",
                        r.tier,
                        str(r.threads),
                        with_interval(r.comparison, r.diff_pct) + (" †" if r.flags else ""),
                        str(r.comparison.n) if r.comparison else "-",
                    ]
                    for r in mine
                ],
            )
    return out


FINDING_TITLES = {
    "leader": "Leader",
    "saturation": "Saturation point",
    "collapse": "Collapse after the peak",
    "buffer-pool-lever": "Buffer pool lever",
    "ro-rw-ratio": "Read-only / read-write ratio",
    "network-overhead": "Network overhead",
    "close-engines": "Engines within 3% everywhere",
}


def _findings(dataset: Dataset, options: ReportOptions) -> list[str]:
    rows = [
        [FINDING_TITLES.get(f.kind, f.kind), f.scenario, f.tier, f.engine, f.detail]
        for f in findings(dataset, include_flagged=options.include_flagged)
    ]
    out = ["## 6. Key findings", "", "Computed from the data above, never written by hand.", ""]
    return out + table(["Finding", "Scenario", "Tier", "Engine", "Detail"], rows)


def _relative(dataset: Dataset, options: ReportOptions, charts: list[Path]) -> list[str]:
    base = options.relative_engine(dataset)
    out = [f"## 7. Relative throughput (baseline {base} = 1.0)", ""]
    for (scenario, tier), table_ in relative(dataset, base).items():
        threads = dataset.threads(scenario, tier)
        out += [f"**{scenario}, tier {tier}**", ""]
        if kinds := cross_family(dataset, list(table_)):
            out += [f"Cross-family ({kinds}): see section 3.", ""]
        out += _chart(charts, f"relative_{scenario}_{safe_name(tier)}")
        out += table(
            ["Engine", *(f"{t}t" for t in threads)],
            [
                [e, *(f"{v[t].value:.2f}{v[t].interval()}" if t in v else "-" for t in threads)]
                for e, v in table_.items()
            ],
        )
    return out


def _chart(charts: list[Path], stem: str) -> list[str]:
    return [f"![{stem}]({p.as_posix()})\n" for p in charts if p.stem == stem]


def _stability(dataset: Dataset, charts: list[Path]) -> list[str]:
    out = [
        "## 8. Stability",
        "",
        "Jitter is the standard deviation of per-second TPS over its mean, after the warm-up "
        "transient is cut ("
        + (
            "MSER-5, White 1997"
            if dataset.fixed_cut is None
            else f"a fixed {dataset.fixed_cut} s, --cut-seconds"
        )
        + "); 'steady from' is where the cut fell.",
        "",
    ]
    rows = stability(dataset)
    for scenario in dataset.scenarios:
        for tier in dataset.tiers(scenario):
            mine = [s for s in rows if (s.cell.scenario, s.cell.tier) == (scenario, tier)]
            if not mine:
                continue
            out += [f"**{scenario}, tier {tier}**", ""]
            out += _chart(charts, f"timeline_{scenario}_{safe_name(tier)}")
            out += _chart(charts, f"boxplot_{scenario}_{safe_name(tier)}")
            out += table(
                [
                    "Engine",
                    "Threads",
                    "Run",
                    "Steady from (s)",
                    "Mean TPS [95%]",
                    "Median",
                    "Std dev",
                    "Jitter (CV)",
                    "Min",
                    "p5",
                    "p95",
                ],
                [
                    [
                        s.cell.engine,
                        str(s.cell.threads),
                        str(s.cell.repetition),
                        str(s.steady_from_s),
                        f"{number(s.mean_tps)} [{number(s.ci_low)}, {number(s.ci_high)}]",
                        number(s.median),
                        number(s.std),
                        "-" if s.jitter is None else f"{s.jitter * 100:.1f}%",
                        number(s.minimum),
                        number(s.p5),
                        number(s.p95),
                    ]
                    for s in mine
                ],
            )
    repeated = repetitions(dataset)
    if repeated:
        out += ["**Across repetitions: mean of the repetition means, with its 95% interval**", ""]
        out += table(
            ["Scenario", "Tier", "Engine", "Threads", "Runs", "Mean TPS", "95% interval"],
            [
                [
                    r.point[0],
                    r.point[1],
                    r.point[2],
                    str(r.point[3]),
                    str(r.reps),
                    number(r.mean),
                    f"[{number(r.low)}, {number(r.high)}]",
                ]
                for r in repeated
            ],
        )
    return out


def _pairwise(dataset: Dataset, options: ReportOptions) -> list[str]:
    subject, chosen = options.compared(dataset)
    against = ", ".join(chosen) if chosen else "each other engine"
    out = [f"## 9. Pairwise comparison: {subject} against {against}", ""]
    for pair in pairwise(dataset, subject, chosen):
        engines = [subject, *pair.others]
        if kinds := cross_family(dataset, engines):
            out += [f"Cross-family ({kinds}): see section 3.", ""]
        out += [f"**QPS, {pair.scenario}, tier {pair.tier}**", ""]
        out += table(
            ["Threads", *engines],
            [[str(t), *(number(pair.qps[e].get(t)) for e in engines)] for t in pair.threads],
        )
        out += [f"**p95 latency (ms), {pair.scenario}, tier {pair.tier}**", ""]
        out += table(
            ["Threads", *engines],
            [[str(t), *(number(pair.p95[e].get(t)) for e in engines)] for t in pair.threads],
        )
        out += [f"**QPS improvement of {subject}, {pair.scenario}, tier {pair.tier}**", ""]
        lines = [
            [str(t), *(with_interval(pair.improvement[o].get(t)) for o in pair.others)]
            for t in pair.threads
        ]
        lines.append(["**Average**", *(percent(pair.average_improvement(o)) for o in pair.others)])
        out += table(["Threads", *(f"vs {o}" for o in pair.others)], lines)
    if len(out) == 2:
        out += ["Only one engine in these results.", ""]
    return out


def _flags(dataset: Dataset) -> list[str]:
    out = ["## 10. Flagged and failed cells", ""]
    cells = flagged(dataset)
    if not cells:
        return out + ["None: every cell ran its full length without errors.", ""]
    out += [
        "Legend: `empty` no output; `truncated` no final summary; `errors` / `reconnects` "
        "sysbench counted some; `missing-intervals` / `extra-intervals` per-second lines "
        "do not match the run length; `short` the run ended early; `stall` per-second TPS "
        "under 10% of the cell's median for 3 s or more (notes give the seconds); "
        "`client-bound` sysbench used over 90% of the CPU it could get, so the client, not "
        "the engine, may have set the pace. Flagged cells are left out of the key findings "
        "unless --include-flagged.",
        "",
    ]
    return out + table(
        ["Scenario", "Engine", "Tier", "Threads", "Run", "Status", "Flags", "Reason", "Notes"],
        [
            [
                c.scenario,
                c.engine,
                c.tier,
                str(c.threads),
                str(c.repetition),
                c.status,
                ", ".join(c.flags),
                c.reason,
                c.notes,
            ]
            for c in cells
        ],
    )


def _network(dataset: Dataset) -> list[str]:
    rows = network_latency(dataset)
    if not rows:
        return []
    out = [
        "## 12. Network: latency added per transaction",
        "",
        "Average latency with sysbench on another host than the engine, against both on one "
        "host. Each statement of a transaction is one round trip, so what the network adds "
        "per transaction, divided by the statements per transaction, is the time it adds "
        "per round trip.",
        "",
    ]
    for results, record in dataset.run_records.items():
        for engine, link in record.get("links", {}).items():
            shaping = link.get("shaping") or "none"
            out.append(
                f"- `{results}`, {engine}: measured round trip {link.get('rtt_ms', '?')} ms "
                f"(median `SELECT 1`), link shaping: {shaping}"
            )
    out.append("")
    out += table(
        [
            "engine",
            "mode",
            "tier",
            "threads",
            "local avg ms",
            "network avg ms",
            "added ms/txn",
            "round trips/txn",
            "added ms per round trip",
        ],
        [
            [
                r.engine,
                r.mode,
                r.tier,
                str(r.threads),
                f"{r.local_ms:.2f}",
                f"{r.network_ms:.2f}",
                f"{r.added_ms:+.2f}",
                f"{r.round_trips:.1f}",
                f"{r.per_round_trip_ms:+.3f}",
            ]
            for r in rows
        ],
    )
    for r in rows:
        out.append(
            f"- {r.engine} {r.mode} tier {r.tier}, {r.threads} thread(s): the network adds "
            f"{r.added_ms:.1f} ms per transaction = {r.round_trips:.0f} round trips x "
            f"{r.per_round_trip_ms:.2f} ms."
        )
    out.append("")
    return out


def _figure(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _telemetry(dataset: Dataset, charts: list[Path]) -> list[str]:
    rows = operation_table(dataset)
    if not rows:
        return []
    out = [
        "## 11. Telemetry: per-operation figures and timelines",
        "",
        "Totals over each cell's steady seconds divided by its transactions, averaged over "
        "repetitions. CPU is the server process's (user + system, all threads); context "
        "switches (vmstat) and disk (iostat) are the host's, sysbench included.",
        "",
    ]
    out += table(
        [
            "scenario",
            "tier",
            "workload",
            "engine",
            "threads",
            "TPS",
            "CPU µs/txn",
            "cs/txn",
            "KB read/txn",
            "KB written/txn",
            "redo B/txn",
        ],
        [
            [
                r.scenario,
                r.tier,
                r.workload,
                r.engine,
                str(r.threads),
                number(r.tps),
                _figure(r.figures.cpu_us, 0),
                _figure(r.figures.context_switches),
                _figure(r.figures.kb_read, 2),
                _figure(r.figures.kb_written, 2),
                _figure(r.figures.redo_bytes, 0),
            ]
            for r in rows
        ],
    )
    for kind, cell in notable_cells(dataset):
        found = timeline(dataset, cell)
        if found is None:
            continue
        stalls = ", ".join(f"{a}-{b} s" for a, b in found.stalls) or "none"
        out.append(
            f"**{kind.capitalize()} cell**: {found.label}, {number(cell.tps or 0)} TPS; "
            f"stalls: {stalls}; steady from second {found.cut + 1}."
        )
        out.append("")
        out += [
            f"![{kind} cell]({p.as_posix()})\n"
            for p in charts
            if p.name == telemetry_chart_name(kind)
        ]
    return out


def render(dataset: Dataset, options: ReportOptions, charts: list[Path]) -> str:
    title = ", ".join(str(p) for p in dataset.sources)
    lines = [f"# oltplab report: {title}", ""]
    lines += _environment(dataset)
    lines += _configuration(dataset)
    lines += _results(dataset)
    lines += _progression(dataset, options)
    lines += _differences(dataset, options)
    lines += _findings(dataset, options)
    lines += _relative(dataset, options, charts)
    lines += _stability(dataset, charts)
    lines += _pairwise(dataset, options)
    lines += _flags(dataset)
    lines += _telemetry(dataset, charts)
    lines += _network(dataset)
    return "\n".join(without_html(line) for line in lines)
