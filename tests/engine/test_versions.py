"""Which release changed it, with real engines: five "releases" of one real binary, the
last two carrying settings that halve the read-only cell's TPS at 4 threads (every
statement's optimizer trace built, and written with its plan to the slow query log).
Change points
over the series and a bisection both name release 4; the explanation names the setting
and profiles both releases; identical releases show no change. And a rerun says whether
it reproduced the original."""

from __future__ import annotations

import json
import re
from pathlib import Path

from oltplab.analysis.changes import release_series, version_changes
from oltplab.analysis.dataset import load
from oltplab.analysis.points import Points
from tests.support.cli import oltplab
from tests.support.junit_schema import junit_schema
from tests.support.sections import section

# Cells of one engine differ by 20-30% here (a 2-3 s dip of the host in a 4 s cell), so
# the planted change is far larger: 2,141 against 1,026 tps at 4 threads, 3 repetitions
# each (optimizer_trace alone: 1,588, too close to the noise to be found every time).
SLOWER = {
    "optimizer_trace": "enabled=on",
    "slow_query_log": "ON",
    "long_query_time": "0",
    "log_slow_verbosity": "query_plan,explain",
}


def releases(slow_from: int | None, count: int = 5, repetitions: int = 3) -> str:
    lines = []
    for n in range(1, count + 1):
        extra = SLOWER if slow_from is not None and n >= slow_from else {}
        options = ", ".join(f'{k} = "{v}"' for k, v in extra.items())
        lines.append(
            f'[[engines]]\nname = "r{n}"\nsource = {{debian = "mariadb-server-core"}}\n'
            + (f"extra = {{{options}}}\n" if options else "")
        )
    return (
        'name = "releases"\nworkloads = ["oltp_read_only"]\n'
        + "".join(lines)
        + '[config]\nbuffer_pool = "128M"\n[dataset]\ntables = 2\ntable_size = 5000\n'
        "[protocol]\nwarmup_ro_seconds = 2\nwarmup_rw_seconds = 0\nwarmup_threads = 4\n"
        # Each release started once, its cells back to back: the suite spends its time on
        # the cells, not on restarts (bisect steps interleave theirs, as bisect does).
        f'measure_seconds = 4\nthreads = [4]\nrepetitions = {repetitions}\norder = "alternating"\n'
        "stop_timeout_seconds = 60\n"
    )


def test_change_points_and_a_bisection_name_the_release_that_changed(
    tmp_path: Path, browser_page
) -> None:
    (tmp_path / "releases.toml").write_text(releases(slow_from=4))
    done = oltplab("run", "releases.toml", "-r", "series", "--snapshots", "snapshots", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    report = oltplab("report", "series", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    md = (tmp_path / "series" / "report" / "report.md").read_text()
    changed = section(md, "Where it changed")
    assert "| mariadb | r3 | r4 | 1 |" in changed, changed
    # The identical releases r1..r3 of the same rounds. "No change among them" is not what
    # one run guarantees here: a CI run on 2026-11-25 measured r3 +14% over r2 in each of the
    # three rounds (p 0.0005, paired interval [+0.6, +33.4]), a difference of the host
    # between positions in a round that the analysis rightly reports. What the design
    # guarantees is that such a difference stays well below the planted one.
    dataset = load([tmp_path / "series"])
    planted = [c for c in version_changes(release_series(Points(dataset))) if c.last_good == "r3"]
    assert len(planted) == 1 and planted[0].change_pct < -30, planted
    dataset.cells = [c for c in dataset.cells if c.engine in ("r1", "r2", "r3")]
    dataset.engines = {k: v for k, v in dataset.engines.items() if k in ("r1", "r2", "r3")}
    among_identical = version_changes(release_series(Points(dataset)))
    assert all(abs(c.change_pct) < abs(planted[0].change_pct) / 2 for c in among_identical), (
        among_identical
    )

    # Bisection adds repetitions until each step is decided: its cells stay 4 s long. Over
    # three releases, the second the first slow one (each step costs the suite a minute):
    # the ends are confirmed apart, then one midpoint step names it.
    (tmp_path / "bisect.toml").write_text(releases(slow_from=2, count=3))
    bisected = oltplab(
        "bisect", "--good", "r1", "--bad", "r3", "--spec", "bisect.toml",
        "--margin", "10", "--max-repetitions", "6", "-r", "bisect", cwd=tmp_path,
    )  # fmt: skip
    assert bisected.returncode == 0, bisected.stdout + bisected.stderr
    found = json.loads((tmp_path / "bisect" / "bisect.json").read_text())
    assert (found["last_good"], found["first_changed"]) == ("r1", "r2"), found
    assert len(found["steps"]) == 2, found["steps"]  # the ends, then r1 against r2
    md = (tmp_path / "bisect" / "bisect.md").read_text()
    assert "| optimizer_trace | enabled=off | enabled=on |" in md
    assert "## What differs: r2 against r1" in md
    # the flame graph of a real cell opens, and lists functions with samples per transaction
    page, errors = browser_page
    # Without it, bisect.md says why (what the profiler wrote down in each cell).
    assert (tmp_path / "bisect" / "flamegraph.html").is_file(), md
    page.goto((tmp_path / "bisect" / "flamegraph.html").as_uri())
    assert page.locator("rect.frame").count() > 20
    rows = page.locator("#functions tbody tr")
    assert rows.count() >= 5
    first = rows.nth(0).locator("td").all_inner_texts()
    assert first[0] and float(first[3]) > 0
    assert errors == []


def test_a_rerun_says_whether_it_reproduced(tmp_path: Path) -> None:
    # Runs of one engine differ by 10-15% here, and now and then one is 30% off (a slow
    # period of the host): six of them decide within +-25%.
    (tmp_path / "one.toml").write_text(releases(slow_from=None, count=1, repetitions=6))
    assert oltplab("run", "one.toml", "-r", "first", cwd=tmp_path).returncode == 0
    again = oltplab("rerun", "first", "-r", "again", "--yes", "--margin", "25", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    # A repeat of the same spec is reproduced or, when the host drifted between the two runs
    # (a CI run on 2026-11-25: the repeat +17.2% [+6.1, +31.3]), undecided; never refuted.
    said = re.search(r"verdict: (.*)", again.stdout)
    assert said is not None, again.stdout
    assert said.group(1).startswith(("reproduced within 25%", "undecided")), again.stdout
    repeat = json.loads((tmp_path / "again" / "run.json").read_text())
    assert repeat["rerun_of"]["results"] == str(tmp_path / "first")
    assert repeat["differences"] == []
    assert repeat["reproduction"]["verdict"].startswith(said.group(1).strip())
    # the two side by side in one report
    report = oltplab("report", "first", "again", "--output", "both", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "both" / "report.md").read_text()
    assert "| r1@first |" in text and "| r1@again |" in text
    assert "rerun of `" in text and "same host, sysbench and engine binaries" in text
    # Two runs of one engine can differ by a few percent (the host drifts between them, seen
    # here: -5.0% [-7.2, -2.8]): within +-1% is never what they show, whichever it says.
    strict = oltplab("reproduced", "first", "again", "--margin", "1", cwd=tmp_path)
    said = re.search(r"verdict: (.*)", strict.stdout)
    assert said is not None, strict.stdout
    assert said.group(1).startswith(
        ("undecided: the interval is wider than the margin of 1%", "not reproduced")
    ), said.group(1)
    # the same spec run again with settings that cost far more than the margin
    (tmp_path / "slow.toml").write_text(releases(slow_from=1, count=1))
    assert oltplab("run", "slow.toml", "-r", "slower", cwd=tmp_path).returncode == 0
    # Another spec: no verdict unless asked for one anyway, the difference named.
    refused = oltplab("reproduced", "first", "slower", "--margin", "10", cwd=tmp_path)
    assert refused.returncode == 2 and "were not measured alike (spec: first has" in (
        refused.stderr
    ), refused.stderr
    verdict = oltplab(
        "reproduced", "first", "slower", "--margin", "10", "--allow-mismatch", cwd=tmp_path
    )
    assert verdict.returncode == 1, verdict.stdout + verdict.stderr
    assert "verdict: not reproduced" in verdict.stdout, verdict.stdout
    assert "beyond +-10%" in verdict.stdout
    # The regression gate on the same real runs: the slowed one fails it, named; the repeat
    # of the same spec (an A/A pair) never does.
    gated = oltplab("gate", "first", "slower", "--margin", "10%", "--allow-mismatch", cwd=tmp_path)
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert "gate: regression (r1 " in gated.stderr and "| regression |" in gated.stdout
    schema = junit_schema()
    schema.validate((tmp_path / "slower" / "gate.xml").read_text())
    aa = oltplab("gate", "first", "again", "--margin", "10%", cwd=tmp_path)
    assert aa.returncode in (0, 5), aa.stdout + aa.stderr
    schema.validate((tmp_path / "again" / "gate.xml").read_text())
