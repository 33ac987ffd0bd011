"""The spec the precision benches share: a tiny read-only dataset, one thread, short
warm-ups, in one place so that their trials measure alike."""

from __future__ import annotations

from pathlib import Path

PLANTED_SCRIPT = Path(__file__).parent / "workloads" / "planted_read_only.lua"


def planted_workloads(per_100: dict[str, int]) -> str:
    """Workloads of the planted script: each name with its extra selects per 100."""
    listed = ",\n".join(
        f'  {{ name = "{name}", script = "{PLANTED_SCRIPT}", read_only = true, '
        f"options = {{ planted_per_100 = {count} }} }}"
        for name, count in per_100.items()
    )
    return f"[\n{listed}\n]"


def tiny_spec(
    name: str,
    engines: list[str],
    workloads: str,
    seconds: int,
    repetitions: int,
    threads: int = 1,
    protocol: str = "",
) -> str:
    listed = "\n".join(f'[[engines]]\nname = "{engine}"\n' for engine in engines)
    return f"""
name = "{name}"
workloads = {workloads}

{listed}
[config]
buffer_pool = "128M"

[dataset]
tables = 1
table_size = 10000

[protocol]
warmup_ro_seconds = 3
warmup_rw_seconds = 3
warmup_threads = {threads}
measure_seconds = {seconds}
threads = [{threads}]
repetitions = {repetitions}
{protocol}"""
