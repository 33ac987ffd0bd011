"""The per-run A/A canary on real engines: its verdict is in report.md, report.html, the
gate's summary and the site; with one CPU loaded by another process for part of the run,
the disturbed rounds are measured again or the canary marks the host unfit, and no
DIFFERENT verdict on the real pair passes silently."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from oltplab.store.ledger import Ledger
from tests.support.cli import oltplab, start_oltplab
from tests.support.engines import SAME_BINARY_TWICE, cells, spec_text, wait_for

ENGINE = "mariadb-10.11.5"
TWIN = f"Canary ({ENGINE}-canary, an identical twin of {ENGINE})"
BURN = "import time\nt = time.time()\nwhile time.time() - t < {seconds}: pass\n"


def test_the_canarys_verdict_is_in_the_report_the_page_the_gate_and_the_site(
    tmp_path: Path,
) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(spec_text([ENGINE], threads=[1], measure=3, workloads=("oltp_read_only",)))
    results = tmp_path / "results"
    run = oltplab(
        "run", str(spec), "-r", str(results), "--canary", "--margin", "50%", "--budget", "3m",
        cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert {row["engine"] for row in cells(results)} == {ENGINE, f"{ENGINE}-canary"}
    report = oltplab("report", str(results), cwd=tmp_path)
    assert report.returncode == 0, report.stdout + report.stderr
    said = f"{TWIN}: SAME against ±50% on"
    assert said in run.stdout  # where the run's tables end, as the report gives it
    markdown = (results / "report" / "report.md").read_text()
    assert said in markdown
    # Beside a search's verdicts, how often its rule decided right in the recorded trials.
    assert "![power curve](charts/power-curve.png)" in markdown
    assert (results / "report" / "charts" / "power-curve.png").stat().st_size > 10_000
    assert said in (results / "report" / "report.html").read_text()
    gate = oltplab("gate", str(results), str(results), "-o", str(tmp_path / "gate"), cwd=tmp_path)
    assert said in gate.stdout and said in (tmp_path / "gate" / "gate.md").read_text()
    site = oltplab("site", str(results), "-o", str(tmp_path / "site"), cwd=tmp_path)
    assert site.returncode == 0, site.stdout + site.stderr
    assert said in (tmp_path / "site" / "index.html").read_text()


def test_a_loaded_cpu_is_measured_again_or_flags_the_host_never_a_silent_difference(
    tmp_path: Path,
) -> None:
    """The real pair is one binary under two names: any DIFFERENT between them is false."""
    engines = SAME_BINARY_TWICE
    text = spec_text([], threads=[1], measure=3, workloads=("oltp_read_only",))
    spec = tmp_path / "spec.toml"
    spec.write_text(text.replace("[protocol]\n", engines + "[protocol]\ncanary = true\n"))
    results = tmp_path / "results"
    run = start_oltplab(
        "run", str(spec), "-r", str(results), "--margin", "3%", "--budget", "4m",
        "--rerun-disturbed", cwd=tmp_path,
    )  # fmt: skip
    wait_for(lambda: sum(row["status"] == "done" for row in cells(results)) >= 3, 300, "a round")
    burner = subprocess.Popen([sys.executable, "-c", BURN.format(seconds=15)])
    output, _ = run.communicate(timeout=600)
    burner.wait()
    assert run.returncode in (0, 5), output
    ledger = Ledger.open(results, create=False, journal=False)
    try:
        measured_again = ledger.superseded()
    finally:
        ledger.close()
    report = oltplab("report", str(results), cwd=tmp_path)
    assert report.returncode == 0, report.stdout + report.stderr
    page = (results / "report" / "report.md").read_text()
    unfit = "Host unfit for this margin" in page
    assert unfit or measured_again, "the load was neither measured again nor flagged"
    assert TWIN in page or unfit
    rows = json.loads(
        oltplab(
            "export", str(results), "--table", "precision", "--format", "json", cwd=tmp_path
        ).stdout
    )
    real = [r for r in rows if "canary" not in json.dumps(r)]
    assert real, rows
    for row in real:
        if row["verdict"] == "DIFFERENT":
            assert unfit, row  # a false difference, and the canary said the host was unfit
