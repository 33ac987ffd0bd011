"""A distributed run's shards as they are on disk, without a scheduler."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from oltplab.plan import cells_of
from oltplab.plan.blocks import Shard, shard_sessions
from oltplab.spec import cell_definition_digest, parse_spec
from oltplab.store.ledger import Ledger
from oltplab.store.outcome import CellOutcome
from oltplab.store.provenance import RunFacts, RunRecord
from oltplab.sysbench.reading import read_output
from tests.support.synthetic import sysbench_text

SPEC = """
name = "spread"
workloads = ["oltp_read_write", "oltp_read_only"]
engines = [{name = "mysql-8.0.31"}, {name = "mariadb-10.11.5"}]
tiers = [{name = "128M", buffer_pool = "128M"}, {name = "256M", buffer_pool = "256M"},
         {name = "512M", buffer_pool = "512M"}]
[protocol]
warmup_ro_seconds = 10
warmup_rw_seconds = 20
measure_seconds = 30
threads = [1, 4]
repetitions = 2
order = "interleaved"
[distribute]
canary = "mysql-8.0.31 256M oltp_read_only 1t"
"""

BINARY = {"mysql-8.0.31": "a1" * 32, "mariadb-10.11.5": "b2" * 32}


def fake_shard(
    root: Path, spec_text: str, shard: Shard, machine: str, tps: float, binaries=BINARY
) -> Path:
    """A shard directory as `oltplab run --shard` leaves it, with synthetic outputs."""
    spec = parse_spec(spec_text, "spec")
    ledger = Ledger.open(root)
    facts = RunFacts(
        spec_text, "spec.toml", root, spec.digest(), "oltplab run", {}, {}, [], None,
        {"machine": machine},
    )  # fmt: skip
    record = RunRecord.begin(root, facts)
    try:
        ledger.set_meta("spec", spec_text)
        ledger.set_meta("spec_digest", spec.digest())
        ledger.set_meta("shard", str(shard))
        ledger.set_meta("block", ",".join(spec.distribute.block))
        for engine in spec.engines:
            sha256 = binaries[engine.name]
            ledger.record_engine(
                engine.name, family="x", version="1", source={"debian": "x"}, binary_sha256=sha256
            )
            record.engine(engine.name, {"binary_sha256": sha256})
        run_id = ledger.begin_run(spec.digest(), {"machine": machine, "host": {"hostname": "x"}})
        cells = cells_of(shard_sessions(spec, shard))
        ledger.register(
            (c, cell_definition_digest(spec, c.engine, c.tier, c.workload)) for c in cells
        )
        rng = np.random.default_rng(len(machine))
        (root / "raw").mkdir()
        for number, cell in enumerate(cells):
            ledger.mark_running(cell, run_id)
            series = list(rng.normal(tps * cell.threads, tps * 0.02, 60))
            artifact = f"raw/{machine}-{number}.sysbench.txt"
            (root / artifact).write_text(sysbench_text(series, cell.threads))
            output = read_output(root / artifact)
            outcome = CellOutcome(output.summary, (), artifact, samples=output.samples)
            ledger.record_result(cell, outcome)
        ledger.finish_run(run_id, "done")
    finally:
        ledger.close()
    return root
