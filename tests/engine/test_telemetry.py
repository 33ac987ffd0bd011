"""Telemetry on real runs: the demo's series in the ledger on the sysbench clock, a rerun
from run.json alone reported side by side, and a killed collector."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import sqlite3
from pathlib import Path

from oltplab.base import metrics
from oltplab.spec import load_spec
from oltplab.store.ledger import Ledger
from oltplab.telemetry.collectors import describe_seconds, missing_seconds
from oltplab.telemetry.engine import read_samples
from oltplab.telemetry.parsers import PARSERS
from oltplab.telemetry.sampler import read_lines
from tests.support.cli import oltplab, start_oltplab
from tests.support.engines import cells, spec_text, wait_for
from tests.support.sections import section

OS_SOURCES = {"iostat", "vmstat", "mpstat"}
DEMO = Path(__file__).parent.parent.parent / "src" / "oltplab" / "spec" / "demo.toml"
DEMO_SECONDS = load_spec(DEMO).protocol.measure_seconds


def series(results: Path) -> dict[str, dict[tuple[str, str], dict[int, float]]]:
    db = sqlite3.connect(f"file:{results / 'ledger.sqlite'}?mode=ro", uri=True)
    found: dict[str, dict[tuple[str, str], dict[int, float]]] = {}
    try:
        for key, source, metric, second, value in db.execute(
            "SELECT c.key, t.source, t.metric, t.second, t.value FROM telemetry t"
            " JOIN cells c ON c.id = t.cell_id"
        ):
            found.setdefault(key, {}).setdefault((source, metric), {})[second] = value
    finally:
        db.close()
    ledger = Ledger.open(results, create=False, journal=False)
    try:
        for key, tps in ledger.tps_series().items():
            found.setdefault(key, {})[("sysbench", "tps")] = {
                second: float(value) for second, value in enumerate(tps, start=1)
            }
    finally:
        ledger.close()
    return found


# What a cell that other load disturbed says of it: the seconds, and the load's peak.
INTERFERENCE = re.compile(
    r"interference \d+ of \d+ steady s \(other load and steal up to \d+\.\d\d CPU\)"
)
KNOWN_TO = 0.1  # seconds: a probe read that took longer is not placed well enough to compare


def commits_against_tps(
    sysbench_output: Path, tps: dict[int, float], started_after: float
) -> tuple[float, float, int]:
    """How far the engine's commits are from sysbench's transactions over the same stretches
    of the sysbench clock (relative to the transactions): stretch by stretch, and over the
    stretches summed; and over how many stretches. Each stretch runs between two probe
    reads that took under KNOWN_TO and lies within the run, and sysbench's count there is
    its TPS integrated over the stretch (second k covers (k-1, k]), as if even within the
    second: stretch by stretch, how uneven other load made the seconds adds up; summed, the
    stretches' inner ends cancel."""
    stem = sysbench_output.name.removesuffix(".sysbench.txt")
    probe = sysbench_output.with_name(f"{stem}.engine.jsonl")
    reads = [
        (line["t"] + line["read_s"] / 2 + started_after, sample["status"]["Com_commit"])
        for line, sample in zip(read_lines(probe), read_samples(probe), strict=True)
        if line["read_s"] < KNOWN_TO and "Com_commit" in sample["status"]
    ]
    apart = total = difference = 0.0
    stretches = 0
    for (start, before), (end, after) in itertools.pairwise(reads):
        if start < 0 or end > max(tps) or end - start > 1.5:
            continue
        counted = sum(
            rate * max(0.0, min(end, second) - max(start, second - 1))
            for second, rate in tps.items()
        )
        apart += abs(after - before - counted)
        difference += after - before - counted
        total += counted
        stretches += 1
    if not total:
        return 0.0, 0.0, stretches
    return apart / total, abs(difference) / total, stretches


def distance(commits: dict[int, float], tps: dict[int, float], lag: int) -> float:
    """The summed absolute difference of the two, shifted by lag, over every second the
    shift leaves in both."""
    return sum(abs(commits[s + lag] - tps[s]) for s in tps if s + lag in commits)


def stalled(sysbench_output: Path, source: str) -> bool:
    """Whether the collector's raw output shows it went more than 1.5 s without a sample,
    or the load sampler (a thread of oltplab's own) did: the whole machine stopped, which
    the OS tools cannot show when it was at their first line (the since-boot line, which
    is not a sample)."""
    stem = sysbench_output.name.removesuffix(".sysbench.txt")
    if source == "engine":
        times = [s["t"] for s in read_samples(sysbench_output.with_name(f"{stem}.engine.jsonl"))]
    else:
        text = sysbench_output.with_name(f"{stem}.{source}.txt").read_text(errors="replace")
        times = [s.clock for s in PARSERS[source](text) if s.clock is not None]
    machine = [s["t"] for s in read_lines(sysbench_output.with_name(f"{stem}.load.jsonl"))]
    return any(
        later - earlier > 1.5
        for found in (times, machine)
        for earlier, later in itertools.pairwise(found)
    )


def test_demo_cells_have_aligned_series_and_their_telemetry_is_drawn(
    tmp_path, browser_page, first_tutorial
):
    # The demo the first tutorial ran: this test only reads its results.
    results = first_tutorial.folder / "runs" / "demo"
    measured = [r for r in cells(results) if r["status"] == "done"]
    assert len(measured) == 8
    found = series(results)
    clocks = {
        record["key"]: record["clock"]
        for record in read_lines(results / "journal.jsonl")
        if record.get("type") == "result"
    }
    told_apart = compared = 0
    for cell in measured:
        data = found[cell["key"]]
        tps = data[("sysbench", "tps")]
        duration = DEMO_SECONDS
        sources = {source for source, _ in data}
        assert OS_SOURCES | {"engine"} <= sources, (cell["key"], sources)
        for source in OS_SOURCES | {"engine"}:
            seconds = {s for (src, _), values in data.items() if src == source for s in values}
            # Every second of the run is there, unless the collector itself went silent
            # (on this 2-core VM all of them now and then miss a few seconds at once):
            # then its own timestamps show the stall and the cell names exactly what is lost.
            lost = missing_seconds(seconds, duration)
            if lost:
                assert stalled(results / cell["artifact"], source), (cell["key"], source, lost)
                assert "telemetry-gap" in cell["flags"].split(",")
                assert f"{source}: no samples for {describe_seconds(lost)}" in cell["notes"]
            # Nothing strays beyond one second of the run.
            assert min(seconds) >= 0 and max(seconds) <= duration + 1, (source, sorted(seconds))
        # The engine's commits follow sysbench's transactions over the stretches the probe's
        # reads place (one starved by other load for more than a tenth of a second says only
        # that its counters were read somewhere in that time): over all of them, in every
        # cell; second by second in a cell that other load left alone, and when it did not,
        # the cell says so (flagged interference, with how much). A busy day's flagged cells
        # were up to 18% apart stretch by stretch and within 2% over the stretches summed.
        commits = data[("engine", "Com_commit")]
        apart, summed, stretches = commits_against_tps(
            results / cell["artifact"], tps, clocks[cell["key"]]["started_after"]
        )
        if stretches >= 3:
            compared += 1
            assert summed < 0.15, (cell["key"], summed, stretches)
            if "interference" in cell["flags"].split(","):
                assert INTERFERENCE.search(cell["notes"]), cell["notes"]
            else:
                assert apart < 0.15, (cell["key"], apart, stretches)
        # The alignment is right to within a second when a 2 s shift cannot fit as well as
        # none. By the triangle inequality a shifted distance is at least TPS's own change
        # over 2 s less the unshifted distance, so a cell whose TPS changes by more than
        # twice the probe's jitter (its seconds are not sysbench's) rules out both shifts;
        # had the series been 2 s apart, its unshifted distance would be that change itself
        # and no cell would. A flat cell here (1-2% jitter, as much change) decides nothing.
        # (Over the seconds the probe has, for the inequality to hold when it missed some.)
        paired = {second: value for second, value in tps.items() if second in commits}
        unshifted = distance(commits, paired, 0)
        if all(distance(paired, paired, lag) > 2 * unshifted for lag in (-2, 2)):
            told_apart += 1
            assert all(unshifted < distance(commits, paired, lag) for lag in (-2, 2)), cell["key"]
        if "telemetry-gap" in cell["flags"]:
            assert "no samples for" in cell["notes"], cell["notes"]
        assert data[("mpstat", "all:%usr")] and data[metrics.SERVER_CPU]

    assert told_apart > 0, "no cell's TPS changed enough to check the alignment"
    assert compared > 0, "no cell had three probe reads placed to a tenth of a second"
    record = json.loads((results / "run.json").read_text())
    assert {"mysql-8.0.31", "mariadb-10.11.5"} <= set(record["engines"])
    assert all(len(e["binary_sha256"]) == 64 for e in record["engines"].values())
    assert record["configs"]["mysql-8.0.31"]["128M"].startswith("#")
    assert "oltp_read_write.lua" in record["sysbench"]["scripts"]
    for key in ("kernel", "cpu_model", "cores", "memory_bytes", "transparent_hugepages"):
        assert record["host"][key], key
    assert (results / "pt-summary.txt").stat().st_size > 0
    assert list(results.rglob("*.pt-mysql-summary.txt"))

    exported = oltplab(
        "export", str(results), "--table", "operations", "--format", "json", cwd=tmp_path
    )
    assert exported.returncode == 0, exported.stderr
    operations = json.loads(exported.stdout)
    assert len(operations) == 8
    for row in operations:
        assert row["cpu_us_per_txn"] > 0 and row["context_switches_per_txn"] > 0, row
        # A read-write transaction writes redo; a read-only one writes none.
        assert (row["redo_bytes_per_txn"] or 0) > 0 or row["workload"] == "oltp_read_only", row

    # (a rerun, and a report of it beside the original: tests/engine/test_versions.py)
    report = oltplab("report", str(results), "--output", "report", cwd=tmp_path)
    assert report.returncode == 0, report.stdout + report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    assert section(text, "Telemetry: per-operation figures and timelines")
    assert (tmp_path / "report" / "charts" / "telemetry_slowest.png").stat().st_size > 0

    # The page draws any cell's telemetry under its TPS, and the per-operation table.
    page, errors = browser_page
    page.goto((tmp_path / "report" / "report.html").as_uri())
    page.wait_for_selector("#telemetry .main-svg")
    assert page.is_visible("#telemetry-section")
    names = page.evaluate("() => document.getElementById('telemetry').data.map(t => t.name)")
    assert names[0] == "TPS"
    for panel in (
        "CPU %",
        "Disk MB/s",
        "Threads running",
        "History list length",
        "Checkpoint age MB",
        "Dirty pages",
    ):
        assert any(name.startswith(panel) for name in names), (panel, names)
    assert page.locator("#operations tbody tr").count() == 8
    options = page.locator("#cell option")
    assert options.count() == 8
    other = options.nth(3).get_attribute("value")
    page.select_option("#cell", other)
    label = page.evaluate(f"() => DATA.timelines[{json.dumps(other)}].label")
    assert page.locator("#cell option:checked").inner_text().startswith(label)
    assert errors == []


def collector_of(parent: int, name: str) -> int | None:
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        command = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if command == name and ppid == parent:
            return int(proc.name)
    return None


def test_killed_collector_leaves_the_cell_valid_and_flagged(tmp_path):
    measure = 6
    (tmp_path / "s.toml").write_text(spec_text(["mysql-8.0.31"], threads=[2], measure=measure))
    run = start_oltplab(
        "run", "s.toml", "--results", "out", "--telemetry", "default,-pt-mysql-summary",
        cwd=tmp_path,
    )  # fmt: skip
    out = tmp_path / "out"

    def sysbench_output() -> str:
        files = list(out.glob("benchmark_logs/*/*/Tier*_2th.sysbench.txt"))
        return files[0].read_text() if files else ""

    wait_for(lambda: "[ 2s ]" in sysbench_output(), 240, "the cell's second second")
    vmstat = collector_of(run.pid, "vmstat")
    assert vmstat is not None
    os.kill(vmstat, signal.SIGKILL)
    # The last second sysbench had reported just after the kill: the kill came before its
    # next one ended, however late this test got to it.
    killed_by = max(int(s) for s in re.findall(r"^\[ (\d+)s \]", sysbench_output(), re.M)) + 1
    output, _ = run.communicate(timeout=120)
    assert run.returncode == 0, output
    (cell,) = cells(out)
    assert cell["status"] == "done" and cell["tps"] > 0
    assert "telemetry-gap" in cell["flags"].split(",")
    assert "vmstat" in cell["notes"] and "signal 9" in cell["notes"]
    data = series(out)[cell["key"]]
    vmstat_seconds = {s for (src, _), v in data.items() if src == "vmstat" for s in v}
    assert max(vmstat_seconds) <= killed_by, (killed_by, sorted(vmstat_seconds))  # none after
    # The other collectors went on: every second of the run is there, or the seconds lost
    # are named and iostat's own timestamps (or the load sampler's) show the machine stalled.
    iostat = {s for (src, _), v in data.items() if src == "iostat" for s in v}
    lost = missing_seconds(iostat, measure)
    if lost:
        assert stalled(out / cell["artifact"], "iostat"), (lost, cell["notes"])
        assert f"iostat: no samples for {describe_seconds(lost)}" in cell["notes"], cell["notes"]
    # The flag says a side series is incomplete; the cell's numbers still count.
    report = oltplab("report", "out", "--output", "report", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    assert "telemetry-gap" in text
    results_section = text.split("## 3.")[1].split("## 4.")[0]
    tps_rows = [line for line in results_section.splitlines() if line.startswith("| mysql")]
    # Only a flag on the numbers marks them: telemetry-gap does not, but other load on this
    # shared machine (interference) rightly does when it happens during the cell.
    on_the_numbers = set(cell["flags"].split(",")) - {"telemetry-gap", ""}
    assert tps_rows and all(("†" in line) == bool(on_the_numbers) for line in tps_rows), (
        on_the_numbers, tps_rows,
    )  # fmt: skip
