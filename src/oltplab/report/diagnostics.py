"""The report's sections that explain the numbers: flagged and failed cells, telemetry,
the network, and the machines of a distributed run."""

from __future__ import annotations

from pathlib import Path

from oltplab.analysis.model import Analysis
from oltplab.base.wording import counted
from oltplab.report.format import (
    code,
    estimate,
    number,
    percent,
    table,
)
from oltplab.store.directory import chart_file
from oltplab.sysbench.error_codes import codes_text
from oltplab.sysbench.validity import ERROR_RATE_LIMIT


def flags(analysis: Analysis, charts: list[Path]) -> list[str]:
    out = ["## 10. Flagged and failed cells", ""]
    out += _measured_again(analysis)
    cells = analysis.flagged
    if not cells:
        return [*out, "None: every cell ran its full length without errors.", ""]
    out += [
        "Legend: `empty` no output; `truncated` no final summary; `errors` / `reconnects` "
        "sysbench counted some (errors leave a cell in the key findings up to "
        f"{ERROR_RATE_LIMIT:.1%} of its transactions); `missing-intervals` / "
        "`extra-intervals` per-interval lines do not match the run length; `short` the run "
        "ended early; `stall` TPS under 10% of the level the cell ran at (its 90th "
        "percentile second) for 3 s or more (notes give the seconds); `interference` "
        "processes not oltplab's, and the hypervisor's steal, took a quarter of a CPU or "
        "more in a tenth of the steady seconds (notes give "
        "how many and the most they took; `--rerun-disturbed` measures such cells again); "
        "`client-bound` sysbench used over 90% of the CPU it could get, so the client, not "
        "the engine, may have set the pace; `saturated` an open-loop cell served less than "
        "it was offered (its latency is a lower bound), or so much less that sysbench's "
        "queue filled and it stopped. Flagged cells are left out of the key findings "
        "unless --include-flagged.",
        "",
    ]
    # Errors by code, where the gate counted them (not in other harnesses' outputs).
    by_code = any(c.ignored_errors for c in cells)
    return out + table(
        ["Scenario", "Engine", "Tier", "Threads", "Run", "Status", "Flags"]
        + (["Ignored errors by code"] if by_code else [])
        + ["Reason", "Notes"],
        [
            [
                c.scenario,
                c.engine,
                c.tier,
                str(c.threads),
                str(c.repetition),
                c.status,
                c.flags_shown,
                *([codes_text(c.ignored_errors)] if by_code else []),
                c.reason,
                c.notes,
            ]
            for c in cells
        ],
    )


def network(analysis: Analysis, charts: list[Path]) -> list[str]:
    rows = analysis.network
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
    for results, record in analysis.dataset.run_records.items():
        for engine, link in record.get("links", {}).items():
            shaping = link.get("shaping") or "none"
            out.append(
                f"- {code(str(results))}, {engine}: measured round trip "
                f"{link.get('rtt_ms', '?')} ms (median `SELECT 1`), link shaping: {shaping}"
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
                "-" if r.per_round_trip_ms is None else f"{r.per_round_trip_ms:+.3f}",
            ]
            for r in rows
        ],
    )
    for r in rows:
        if r.per_round_trip_ms is not None:
            out.append(
                f"- {r.engine} {r.mode} tier {r.tier}, {counted(r.threads, 'thread')}: the network "
                "adds "
                f"{r.added_ms:.1f} ms per transaction = {r.round_trips:.0f} round trips x "
                f"{r.per_round_trip_ms:.2f} ms"
                + (f" (cross-machine: {r.machines[0]} vs {r.machines[1]})." if r.machines else ".")
            )
    out.append("")
    return out


def machines(analysis: Analysis, charts: list[Path]) -> list[str]:
    rows = analysis.machines
    if len(rows) < 2 and not any(r.canaries for r in rows):
        return []
    dataset = analysis.dataset
    out = [
        "## 13. Machines",
        "",
        f"The cells were measured on {len(rows)} machine(s). Comparisons between figures "
        "measured on different machines (tier against tier, local against network when the "
        "blocks were cut so) are marked cross-machine wherever they are shown; their "
        "interval carries the spread between machines that the canaries show, or they are "
        "`inconclusive (different machines)` without canaries.",
        "",
    ]
    out += table(
        ["machine", "cells", "canary runs", "canary TPS (steady) [95%]", "vs median", ""],
        [
            [
                r.machine,
                str(r.cells),
                ", ".join(f"{c.moment} {number(c.tps_whole_run)}" for c in r.canaries) or "-",
                estimate(r.canary),
                percent(r.vs_median_pct),
                f"**slow** (more than {dataset.slow_machine_pct:g}% under the median)"
                if r.slow
                else "",
            ]
            for r in rows
        ],
    )
    return out


def _figure(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def telemetry(analysis: Analysis, charts: list[Path]) -> list[str]:
    rows = analysis.operations
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
    for kind, cell in analysis.notable:
        found = analysis.timelines.get(cell.key)
        if found is None:
            continue
        stalls = ", ".join(f"{a}-{b} s" for a, b in found.stalls) or "none"
        out.append(
            f"**{kind.capitalize()} cell**: {found.label}, {number(cell.tps or 0)} TPS "
            f"(whole run); stalls: {stalls}; steady from second {found.steady_from}."
        )
        out.append("")
        out += [
            f"![{kind} cell]({p.as_posix()})\n"
            for p in charts
            if p.name == chart_file("telemetry", kind)
        ]
    return out


def _measured_again(analysis: Analysis) -> list[str]:
    """Cells measured again (--rerun-disturbed): the results set aside, which no table uses."""
    dataset = analysis.dataset
    named = {c.key: c for c in dataset.cells}
    rows = [
        [
            f"{cell.engine} {cell.scenario} {cell.tier} {cell.threads}t run {cell.repetition}",
            number(earlier.tps),
            ", ".join(earlier.flags) or "-",
            earlier.why,
            code(earlier.artifact or ""),
        ]
        for key, found in dataset.superseded.items()
        if (cell := named.get(key)) is not None
        for earlier in found
    ]
    if not rows:
        return []
    return [
        "Measured again (`--rerun-disturbed`): these earlier results were set aside; the "
        "tables use each cell's last measurement. A round-mate is a cell of the same round "
        "measured again with it, so the comparison stays paired.",
        "",
        *table(["Cell", "TPS then", "Flags then", "Why", "Raw output"], rows),
    ]
