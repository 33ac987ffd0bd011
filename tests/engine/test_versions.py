"""Which release changed it, with real engines: five "releases" of one real binary, the
last two carrying settings that make every read-only transaction cost the server about
twice the CPU (every statement's optimizer trace built and written with its plan to the
slow query log, and in-memory temporary tables held to 16 kB). Change points over the
series and a bisection both name release 4; the explanation names the setting and profiles
both releases; identical releases show no change of that size. And a rerun says whether it
reproduced the original.

The planted change is judged on the server's CPU per transaction, where it stands far above
this shared host's noise: +125% [+107, +142] against cells that differ by 5-15% when the
host is busiest (2026-12-06, load average 12 on 2 cores), when TPS itself varied threefold
from one cell to the next and no change point could be told on it.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from oltplab.analysis.changes import release_series, version_changes
from oltplab.analysis.dataset import load
from oltplab.analysis.points import Points
from oltplab.base.metrics import CPU_PER_TXN
from oltplab.store.scratch import SNAPSHOTS_ENV
from oltplab.store.series import decode
from tests.support.cli import oltplab
from tests.support.junit_schema import junit_schema
from tests.support.sections import section

SLOWER = {
    "optimizer_trace": "enabled=on",
    "slow_query_log": "ON",
    "long_query_time": "0",
    "log_slow_verbosity": "query_plan,explain",
    "tmp_table_size": "16384",
    "max_heap_table_size": "16384",
}
# The cost per transaction comes from the load sampler, which always runs.
QUICK = ("--no-telemetry",)
CPU = CPU_PER_TXN.name
# A change or a verdict as the commands print it, with its interval: `+62.6% [+11.2, +142.4]`.
INTERVAL = re.compile(r"([+-]?[\d.]+)% \[([+-]?[\d.]+), ([+-]?[\d.]+)\]")
# A bisect step's runs, and the rounds it measured.
STEP_QUERIES = ("SELECT count(*) FROM runs", "SELECT max(repetition) FROM cells")


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
        "[protocol]\nwarmup_ro_seconds = 2\nwarmup_rw_seconds = 0\nwarmup_threads = 2\n"
        # Each release started once, its cells back to back: the suite spends its time on
        # the cells, not on restarts (bisect steps interleave theirs, as bisect does).
        f'measure_seconds = 3\nthreads = [1]\nrepetitions = {repetitions}\norder = "alternating"\n'
        # Not isolated, bisect steps included: with the server held to one CPU that the
        # host's other load shares, the planted cost rose by a third of what it does
        # otherwise (+21% [+10, +33] after six rounds, 2026-12-06), too little to decide on.
        "stop_timeout_seconds = 60\nisolation = false\n"
    )


@pytest.fixture(scope="module")
def series(tmp_path_factory: pytest.TempPathFactory, shared_snapshots: Path) -> Path:
    """The five releases measured, r4 and r5 slowed: results both tests read."""
    folder = tmp_path_factory.mktemp("releases")
    (folder / "releases.toml").write_text(releases(slow_from=4))
    with pytest.MonkeyPatch.context() as env:
        env.setenv(SNAPSHOTS_ENV, str(shared_snapshots))  # as every engine test's runs
        done = oltplab("run", "releases.toml", "-r", "series", *QUICK, cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    return folder / "series"


def test_change_points_and_a_bisection_name_the_release_that_changed(
    series: Path, tmp_path: Path, browser_page
) -> None:
    report = oltplab("report", str(series), "-o", "report", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    md = (tmp_path / "report" / "report.md").read_text()
    # The change point on the server's CPU per transaction, as the report gives it.
    assert "Change points on server CPU per transaction: mariadb r3 -> r4 (" in md, md
    dataset = load([series])
    found = version_changes(release_series(Points(dataset, measure=CPU_PER_TXN)))
    planted = [c for c in found if c.last_good == "r3"]
    assert len(planted) == 1 and planted[0].first_changed == "r4", found
    assert planted[0].change_pct > 30, planted
    # On TPS, "Where it changed" names the same release, or says how large a change its
    # data could show: on a busy host, TPS varies more from one cell to the next than the
    # planted change moves it.
    changed = section(md, "Where it changed")
    on_tps = version_changes(release_series(Points(dataset)))
    assert "| mariadb | r3 | r4 | 1 |" in changed or (
        not on_tps
        and "No change point among the 5 releases of mariadb; the smallest change this data "
        "could show is about"
        in changed
    ), changed
    # The identical releases r1..r3 of the same rounds. "No change among them" is not what
    # one run guarantees here: a CI run on 2026-11-25 measured r3 +14% over r2 in each of the
    # three rounds (p 0.0005, paired interval [+0.6, +33.4]), a difference of the host
    # between positions in a round that the analysis rightly reports. What the design
    # guarantees is that such a difference stays well below the planted one.
    dataset.cells = [c for c in dataset.cells if c.engine in ("r1", "r2", "r3")]
    dataset.engines = {k: v for k, v in dataset.engines.items() if k in ("r1", "r2", "r3")}
    among_identical = version_changes(release_series(Points(dataset, measure=CPU_PER_TXN)))
    assert all(abs(c.change_pct) < abs(planted[0].change_pct) / 2 for c in among_identical), (
        among_identical
    )

    # Bisection adds repetitions until each step is decided: its cells stay 3 s long. Over
    # three releases, the second the first slow one: the ends are confirmed apart, then one
    # midpoint step names it.
    (tmp_path / "bisect.toml").write_text(releases(slow_from=2, count=3))
    bisected = oltplab(
        "bisect", "--good", "r1", "--bad", "r3", "--spec", "bisect.toml",
        "--margin", "10", "--max-repetitions", "6", "--measure", CPU, "-r", "bisect",
        cwd=tmp_path,
    )  # fmt: skip
    found_by = json.loads((tmp_path / "bisect" / "bisect.json").read_text())
    assert len(found_by["steps"]) == 2, found_by["steps"]  # the ends, then r1 against r2
    # r2 is decided like r3; or, when this busy host's CPU per transaction spreads so far
    # that its six rounds leave r2's interval across halfway (a CI run on 2026-12-07:
    # r1 to r3 +217%, r1 to r2 +95% [+64, +137]), the bisection says it is undecided and
    # what it leans on, and exits 5. Never a decided answer that names the wrong release.
    if found_by["steps"][1]["leaning"]:
        assert bisected.returncode == 5, bisected.stdout + bisected.stderr
        assert "undecided, leaning on r2 against r1" in found_by["verdict"], found_by
    else:
        assert bisected.returncode == 0, bisected.stdout + bisected.stderr
        assert (found_by["last_good"], found_by["first_changed"]) == ("r1", "r2"), found_by
    # Each step is one run, however many batches of rounds it took, on engines started once.
    for step in sorted((tmp_path / "bisect" / "steps").iterdir()):
        db = sqlite3.connect(f"file:{step / 'ledger.sqlite'}?mode=ro", uri=True)
        try:
            (runs,), (rounds,) = (db.execute(q).fetchone() for q in STEP_QUERIES)
        finally:
            db.close()
        log = (step / "oltplab.log").read_text()
        started = re.findall(r"INFO (\S+) \S+ \S+: session started", log)
        assert runs == 1 and len(started) == 2 == len(set(started)), (step.name, runs, started)
        assert rounds >= 3, (step.name, rounds)
    md = (tmp_path / "bisect" / "bisect.md").read_text()
    assert f"## What differs: {found_by['first_changed']} against {found_by['last_good']}" in md
    if not found_by["steps"][1]["leaning"]:  # r2's settings against r1's: the planted one
        assert "| optimizer_trace | enabled=off | enabled=on |" in md
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


def judged_beyond(said: str, margin: float) -> bool:
    """Whether a verdict's interval (`changed: -8.1% [-12.0, -4.3], beyond ±5%`) lies
    wholly beyond ±margin, as "not reproduced" and a regression must."""
    found = INTERVAL.search(said)
    assert found, said
    low, high = float(found[2]), float(found[3])
    return low >= margin or high <= -margin


def test_a_rerun_says_whether_it_reproduced(series: Path, tmp_path: Path) -> None:
    """A release run, then rerun: the repeat says whether it reproduced the original, and
    is judged against it. The release is r1 with the slower settings, so that the series'
    r1 (another spec) is its original as it was before them."""
    (tmp_path / "one.toml").write_text(releases(slow_from=1, count=1))
    first = oltplab("run", "one.toml", "-r", "first", *QUICK, cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    again = oltplab("rerun", "first", "-r", "again", "--yes", "--margin", "25", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    said = re.search(r"verdict: (.*)", again.stdout)
    assert said is not None, again.stdout
    repeat = json.loads((tmp_path / "again" / "run.json").read_text())
    assert repeat["rerun_of"]["results"] == str(tmp_path / "first")
    assert repeat["differences"] == []
    assert repeat["reproduction"]["verdict"].startswith(said.group(1).strip())
    # A repeat of the same spec is reproduced or undecided; or, when the host drifted
    # between the two runs by more than the margin (this shared host's TPS moves threefold
    # when others load it), not reproduced, from an interval wholly beyond it. Whichever,
    # the verdict is its interval's.
    (point,) = repeat["reproduction"]["points"]
    if said.group(1).startswith("not reproduced"):
        assert judged_beyond(point["verdict"], 25), point
    else:
        assert said.group(1).startswith(("reproduced within 25%", "undecided")), again.stdout
        assert not judged_beyond(point["verdict"], 25), point
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
    # Against the series' r1, measured without the slower settings (another spec): no
    # verdict unless asked for one anyway, the difference named.
    refused = oltplab("reproduced", str(series), "first", "--margin", "10", cwd=tmp_path)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "were not measured alike (spec: " in refused.stderr, refused.stderr
    assert "series has" in refused.stderr, refused.stderr
    # Asked, on the server's CPU per transaction (where the settings cost about twice the
    # CPU): not reproduced, beyond the margin. Runs apart are compared unpaired, and this
    # host can drift between them by as much (+56% [-1.7, +158.3] from three cells each at
    # load average 28, 2026-12-06): then undecided, saying what would decide; never
    # reproduced.
    verdict = oltplab(
        "reproduced", str(series), "first", "--margin", "10", "--measure", CPU,
        "--allow-mismatch", cwd=tmp_path,
    )  # fmt: skip
    assert verdict.returncode in (1, 5), verdict.stdout + verdict.stderr
    said = " ".join(verdict.stdout.split())
    if verdict.returncode == 1:
        assert "verdict: not reproduced" in said and "beyond ±10%" in said, said
    else:
        assert "verdict: undecided: the interval is wider than the margin of 10%" in said, said
        assert re.search(r"about \d+ repetitions would decide", said), said
    # The regression gate on the same real runs: the slowed one fails it, named (or, as
    # above, is undecided); it never passes.
    gated = oltplab(
        "gate", str(series), "first", "--margin", "10%", "--measure", CPU, "--allow-mismatch",
        cwd=tmp_path,
    )  # fmt: skip
    assert gated.returncode in (1, 5), gated.stdout + gated.stderr
    if gated.returncode == 1:
        assert "gate: regression (r1 " in gated.stderr and "| regression |" in gated.stdout
    else:
        assert "gate: undecided" in gated.stderr and "| undecided |" in gated.stdout
    schema = junit_schema()
    schema.validate((tmp_path / "first" / "gate.xml").read_text())
    # The repeat of the same spec (an A/A pair) passes or is undecided; a regression only
    # from an interval wholly beyond the margin (the host drifted between the runs), named.
    aa = oltplab("gate", "first", "again", "--margin", "10%", cwd=tmp_path)
    assert aa.returncode in (0, 1, 5), aa.stdout + aa.stderr
    if aa.returncode == 1:
        assert "gate: regression (r1 " in aa.stderr, aa.stderr
        regressed = [line for line in aa.stdout.splitlines() if "| regression |" in line]
        assert regressed and all(judged_beyond(line, 10) for line in regressed), aa.stdout
    schema.validate((tmp_path / "again" / "gate.xml").read_text())


def test_one_repetition_far_from_its_releases_others_is_stated_and_read_by_every_command(
    series: Path, tmp_path: Path
) -> None:
    """One repetition of r2 planted far from its others, second by second (as a 2026
    series of PostgreSQL releases had one: 852 TPS where the others gave about 240). A
    change point never splits a release's repetitions, so report, site and the changes
    export read the series, and the report says which repetition disagrees.

    How far: at three repetitions Dixon's Q calls one apart only when its gap to the others
    is over 32 times theirs (Q 0.970), and on a busy host this series' repetitions spread
    widely (CI, 2026-12-06: the smallest change its data could show was 76.6%, and the
    first try, at 3.5 times the TPS, was rightly not called apart). So it is planted a
    hundred times the others' gap beyond them, at least 3.5 times their TPS."""
    planted = tmp_path / "planted"
    shutil.copytree(series, planted, ignore=shutil.ignore_patterns(".work", ".oltplab.lock"))
    with sqlite3.connect(planted / "ledger.sqlite") as db:
        rows = db.execute(
            "SELECT c.id, c.repetition, s.tps FROM cells c JOIN summaries s ON s.cell_id = c.id"
            " WHERE c.engine = 'r2' ORDER BY c.repetition"
        ).fetchall()
        (cell, repetition, own), others = rows[1], [row[2] for row in (rows[0], *rows[2:])]
        target = max(max(others) + 100 * (max(others) - min(others)), 3.5 * max(others))
        factor = target / own
        chunks = db.execute("SELECT chunk, tps FROM samples WHERE cell_id = ?", [cell]).fetchall()
        for chunk, blob in chunks:
            tps = decode(blob)
            assert tps is not None
            db.execute(
                "UPDATE samples SET tps = ? WHERE cell_id = ? AND chunk = ?",
                [(tps * factor).tobytes(), cell, chunk],
            )
        db.execute("UPDATE summaries SET tps = tps * ? WHERE cell_id = ?", [factor, cell])
    report = oltplab("report", str(planted), "-o", "report", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    changed = section((tmp_path / "report" / "report.md").read_text(), "Where it changed")
    stated = [line for line in changed.splitlines() if "The repetitions of r2 disagree (" in line]
    assert any(f": repetition {repetition} gave " in line for line in stated), changed
    site = oltplab("site", str(planted), "-o", "site", cwd=tmp_path)
    assert site.returncode == 0, site.stderr
    exported = oltplab(
        "export", str(planted), "--table", "changes", "-o", "changes.csv", cwd=tmp_path
    )
    assert exported.returncode == 0, exported.stderr
