"""Sections 1 and 2 of the report: where the numbers came from (host, engines, workloads,
dataset, protocol, provenance) and each engine's effective settings per tier."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from oltplab.analysis.dataset import Dataset
from oltplab.analysis.model import Analysis
from oltplab.base.nesting import load_json, load_toml
from oltplab.report.format import code, describe_workload, number, setting, table
from oltplab.spec import DatasetSpec, ProtocolSpec
from oltplab.spec.server_options import extra_option_lines

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
    "innodb_snapshot_isolation",
    # PostgreSQL's own names for the intent (buffer pool, redo, durability, torn pages, log)
    "shared_buffers",
    "max_wal_size",
    "synchronous_commit",
    "fsync",
    "full_page_writes",
    "wal_level",
    "checkpoint_timeout",
    "server_encoding",
    # Defaults PostgreSQL's majors changed outside the intent, which a series across them
    # measures with the engine: checksums from 18's initdb, checkpoints spread over 0.9 of
    # their interval from 14, asynchronous reads from 18, JIT on and autovacuum's cost
    # delay 2 ms (20 before) from 12.
    "data_checksums",
    "checkpoint_completion_target",
    "io_method",
    "effective_io_concurrency",
    "jit",
    "autovacuum_vacuum_cost_delay",
)


def redo_capacity(values: dict[str, str]) -> str | None:
    if values.get("innodb_redo_log_capacity"):
        return values["innodb_redo_log_capacity"]
    size, files = values.get("innodb_log_file_size"), values.get("innodb_log_files_in_group", "1")
    if size and size.isdigit() and files.isdigit():
        return str(int(size) * int(files))
    return size


def effective(values: dict[str, str], name: str) -> str | None:
    return redo_capacity(values) if name == "redo capacity" else values.get(name)


def environment(analysis: Analysis, charts: list[Path]) -> list[str]:
    dataset = analysis.dataset
    out = ["## 1. Environment and provenance", ""]
    for run in dataset.runs:
        if "imported_from" in run:
            out.append(
                f"- {code(str(run['results']))}: imported from {code(str(run['imported_from']))} "
                f"({run['started_at']})"
            )
            continue
        host = run.get("host", {})
        memory = host.get("memory_bytes", 0) / 1024**3
        out.append(
            f"- {code(str(run['results']))}: run of {run['started_at']} ({run['status']}); host "
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
            e.server_version_shown,
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
        out += _extra_options(text)
        found = _spec_sections(text)
        if found is None:
            continue
        data, protocol = found
        out.append(
            f"Dataset: {data.tables} tables x {number(data.table_size)} rows, rand-type "
            f"{data.rand_type}. Protocol: warm-up A {protocol.warmup_ro_seconds} s read-only, "
            f"warm-up B {protocol.warmup_rw_seconds} s read-write (not for read-only "
            f"workloads), {protocol.measure_seconds} s per measurement, "
            f"{protocol.repetitions} repetition(s), order {protocol.order}."
        )
        out.append("")
    return out


def _spec_sections(text: str) -> tuple[DatasetSpec, ProtocolSpec] | None:
    """The dataset and protocol a stored spec ran with, defaults filled in by the spec's own
    models; None for a spec this version cannot read."""
    try:
        spec: dict[str, Any] = load_toml(text)
        return (
            DatasetSpec.model_validate(spec.get("dataset", {})),
            ProtocolSpec.model_validate(spec.get("protocol", {})),
        )
    except (tomllib.TOMLDecodeError, ValidationError):
        return None


def _extra_options(text: str) -> list[str]:
    """The raw server options a stored spec passed, each place it gave them, as it gave
    them (nothing for a spec that is not TOML)."""
    try:
        given = extra_option_lines(load_toml(text))
    except tomllib.TOMLDecodeError:
        return []
    if not given:
        return []
    return [
        "Server options the spec adds to oltplab's own (section 2 shows the key settings):",
        "",
        *(f"- {code(line)}" for line in given),
        "",
    ]


_PICKING = ("rand_type", "rand_pareto_h", "options", "position")


def _picking(facts: dict[str, Any]) -> str:
    pareto_h = facts.get("rand_pareto_h")
    return str(facts.get("rand_type", "uniform")) + (f" (h={pareto_h})" if pareto_h else "")


def _tuning(host: dict[str, Any]) -> str:
    return (
        f"CPU governor {host.get('cpu_governor', '?')}, transparent huge pages "
        f"{host.get('transparent_hugepages', '?')}, swappiness {host.get('swappiness', '?')}"
    )


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
        shards = record.get("shards", [])
        tuning = "" if shards else f"{_tuning(host)}; "  # a merge's: per machine, below
        out.append(
            f"- {code(str(results))} (run.json): {tuning}datadir on "
            f"{', '.join(sorted(disks)) or '-'}; "
            f"sysbench sha256 {str(sysbench.get('sha256', '?'))[:16]}, "
            f"{len(sysbench.get('scripts', {}))} Lua scripts hashed; telemetry "
            f"{'on' if record.get('telemetry', True) else 'off'}"
        )
        out += [
            f"  - machine {shard.get('machine') or '?'} (shard {shard.get('shard', '?')}): "
            f"{_tuning(shard.get('host', {}))}"
            for shard in shards
        ]
        if "instructions_counter" in host:
            cache = f"page cache: {host['page_cache']}; " if "page_cache" in host else ""
            out.append(
                f"  - isolation: {host.get('isolation', 'off')}; {cache}instructions per "
                f"transaction: perf stat -e instructions {host['instructions_counter']}"
            )
        out += [f"  - host check: {advice}" for advice in host.get("advice", [])]
        for engine, link in record.get("links", {}).items():
            out.append(
                f"  - link to {engine}: round trip {link.get('rtt_ms', '?')} ms measured, "
                f"shaping: {link.get('shaping') or 'none'}"
            )
        if "rerun_of" in record:
            found = record.get("differences", [])
            out.append(
                f"  - rerun of {code(str(record['rerun_of'].get('results')))}: "
                + ("; ".join(found) if found else "same host, sysbench and engine binaries")
            )
    return out


def _source(text: str) -> str:
    try:
        source = load_json(text)
    except ValueError:
        return text
    return "; ".join(f"{k}: {_shown_value(v)}" for k, v in source.items() if k != "password_env")


def _shown_value(value: object) -> str:
    """A list as its items, a table (an operator's resource) as its keys' values."""
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if isinstance(value, dict):
        return " ".join(f"{k} {v}" for k, v in value.items())
    return str(value)


def configuration(analysis: Analysis, charts: list[Path]) -> list[str]:
    dataset = analysis.dataset
    out = ["## 2. Configuration", ""]
    if not dataset.variables:
        return [*out, "No server variables were recorded for these results.", ""]
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
