"""Release series, equivalence verdicts, the bisection's inputs, and profiles, without
engines (the bisection itself runs real engines in tests/engine/test_versions.py)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from oltplab.analysis.bisection import LIKE_KNOWN, LIKE_OTHER, CellChoice, counterpart_pct, place
from oltplab.analysis.dataset import Dataset
from oltplab.analysis.equivalence import DIFFERENT, EQUIVALENT, UNDECIDED, judge
from oltplab.analysis.estimate import Comparison, Estimate, t_quantile
from oltplab.analysis.explain import setting_differences
from oltplab.analysis.profiles import Profile, gained_most
from oltplab.base.errors import OltplabError
from oltplab.experiments.bisect import DEFAULT_SPEC, releases_between
from oltplab.report.flamegraph import page
from oltplab.spec import parse_spec
from oltplab.spec.catalog import CATALOG, family_releases, release_key, series
from oltplab.telemetry.profiler import fold
from tests.support.cli import oltplab

PERF_SCRIPT = Path(__file__).parent.parent / "data" / "perf" / "mariadbd.perf-script.txt"


def test_a_family_series_in_release_order() -> None:
    assert release_key("10.11.5") > release_key("10.2.11") > release_key("10.1.23")
    names = [e.name for e in family_releases("mariadb")]
    assert names == sorted(names, key=lambda n: release_key(n.split("-")[1]))
    spec = parse_spec('engines = [{series = "mariadb >=10.2, <12"}]', "spec")
    chosen = [e.name for e in spec.engines]
    assert chosen and all(n.startswith("mariadb-1") for n in chosen)
    assert chosen == [n for n in names if release_key(n.split("-")[1]) >= (10, 2)]
    with pytest.raises(ValueError, match="no catalog release of mariadb is in that range"):
        series("mariadb >=99")
    with pytest.raises(ValueError, match="the family must be one of"):
        series("oracle >=1")
    listed = oltplab("engines", "list", "--family", "mariadb", cwd=Path.cwd())
    assert listed.returncode == 0
    order = [line.split("│")[1].strip() for line in listed.stdout.splitlines()
             if line.startswith("│ mariadb-1")]  # fmt: skip
    assert order == names


def test_engines_list_cuts_no_name_and_no_source_on_a_narrow_terminal() -> None:
    """(issue 60) An 80-column terminal showed sources ending in "…": every name stays
    whole on its line, and a source too long for its column folds onto the next."""
    narrow = {**os.environ, "COLUMNS": "80"}
    listed = oltplab("engines", "list", cwd=Path.cwd(), env=narrow)
    assert listed.returncode == 0, listed.stderr
    assert "…" not in listed.stdout
    first = {line.split("│")[1].strip() for line in listed.stdout.splitlines()
             if line.startswith("│")}  # fmt: skip
    assert set(CATALOG) <= first, set(CATALOG) - first


def test_postgresql_releases_form_a_series_of_major_and_minor() -> None:
    """PostgreSQL's releases since 10 are MAJOR.MINOR: 17.10 comes after 17.9, not before
    17.8; Debian's postgresql-15 follows its major's latest minor, so it is no release."""
    names = [e.name for e in family_releases("postgresql")]
    assert "postgresql-15" not in names
    minors = [n for n in names if n.startswith("postgresql-17.")]
    assert minors == ["postgresql-17.7", "postgresql-17.8", "postgresql-17.9", "postgresql-17.10"]
    spec = parse_spec('engines = [{series = "postgresql >=12, <19"}]', "spec")
    chosen = [e.name for e in spec.engines]
    assert chosen[0] == "postgresql-12.22" and chosen[-1] == "postgresql-18.4"
    assert chosen == [n for n in names if release_key(n.split("-")[1]) >= (12,)]
    assert series("postgresql >=16.12, <17.9") == [
        "postgresql-16.12", "postgresql-16.13", "postgresql-16.14",
        "postgresql-17.7", "postgresql-17.8",
    ]  # fmt: skip
    assert releases_between("postgresql-17.7", "postgresql-17.10", None) == minors
    assert releases_between("postgresql-16.14", "postgresql-17.8", None) == [
        "postgresql-16.14", "postgresql-17.7", "postgresql-17.8",
    ]  # fmt: skip
    with pytest.raises(OltplabError, match="both be releases of one ordered series"):
        releases_between("postgresql-15", "postgresql-17.10", None)
    listed = oltplab("engines", "list", "--family", "postgresql", cwd=Path.cwd())
    assert listed.returncode == 0
    order = [line.split("│")[1].strip() for line in listed.stdout.splitlines()
             if line.startswith("│ postgresql-")]  # fmt: skip
    # Debian's postgresql-15 is listed too, before the releases of its major.
    assert order == sorted([*names, "postgresql-15"], key=lambda n: release_key(n.split("-")[1]))
    assert order.index("postgresql-15") == order.index("postgresql-15.18") - 1


def verdict(point: float, low: float, high: float, margin: float = 3.0) -> str:
    comparison = Comparison(Estimate(point, low, high, 4, "t"), "x")
    return judge(comparison, margin).verdict


def test_two_one_sided_tests() -> None:
    assert verdict(0.5, -1.0, 2.0) == EQUIVALENT
    assert verdict(-30.0, -35.0, -25.0) == DIFFERENT
    assert verdict(1.0, -4.0, 6.0) == UNDECIDED  # wider than the margin
    assert verdict(4.0, 2.0, 6.0) == UNDECIDED  # straddles it
    found = judge(Comparison(Estimate(0.5, -4.0, 5.0, 4, "t"), "x", over_repetitions=True), 3.0)
    # half-width 4.5 must shrink to half the margin, 1.5. Over 4 rounds each side (Welch,
    # 6 degrees of freedom) that is a spread of 4.5 / t(6) x 2 = 4.63 a repetition; with
    # t(52) = 1.67 at 27 rounds, 1.67 x 4.63 / sqrt(27) = 1.49 is the first under 1.5.
    assert found.needed == 27
    assert found.describe("reproduced").startswith("undecided: the interval is wider")
    assert "27 repetitions" in found.describe()
    assert (
        judge(Comparison(Estimate(0.2, -1, 1, 4, "t"), "x"), 3).describe("reproduced")
        == "reproduced within 3%: +0.2% [-1.0, +1.0] (90%)"
    )


def test_repetitions_needed_shrink_as_the_margin_widens_wherever_the_point_lies() -> None:
    def needed(point: float, margin: float, n: int = 4, half: float = 4.5) -> int | None:
        estimate = Estimate(point, point - half, point + half, n, "t")
        return judge(Comparison(estimate, "x", over_repetitions=True), margin).needed

    for point in (0.0, 2.0, 3.9):  # undecided at every margin below
        found = [needed(point, margin) for margin in (2.0, 3.0, 4.0)]
        assert all(a is not None for a in found), found
        assert found == sorted(found, reverse=True), (point, found)
        assert found == [needed(0.0, margin) for margin in (2.0, 3.0, 4.0)]
    # The same spread after more rounds: the interval narrowed as expected (the spread over
    # the square root of the rounds, times t at its degrees of freedom), so the estimate of
    # the repetitions needed in all stays where it was.
    spread = 4.5 / t_quantile(0.90, 6) * 2
    narrowed = t_quantile(0.90, 16) * spread / 3
    assert needed(0.0, 2.0, n=9, half=narrowed) == needed(0.0, 2.0, n=4, half=4.5)
    # One run's interval over its seconds says nothing about repetitions.
    one_run = Comparison(Estimate(0.5, -4.0, 5.0, 30, "long-run variance over seconds"), "x")
    assert judge(one_run, 3.0).needed is None


def test_a_middle_release_goes_to_the_end_it_is_like() -> None:
    def middle(point: float, low: float, high: float, other_end: float):
        return place(Comparison(Estimate(point, low, high, 3, "t"), "x"), other_end)

    # the ends differ by -30%: against the good end, halfway is -15%
    assert middle(-2.0, -12.0, +8.0, -30.0).verdict == LIKE_KNOWN
    assert middle(-28.0, -40.0, -16.0, -30.0).verdict == LIKE_OTHER
    spans = middle(-10.0, -25.0, +5.0, -30.0)
    assert spans.verdict == UNDECIDED and spans.like_known  # its point is on the good side
    assert "spans halfway (-15.0%)" in spans.describe()
    # against the bad end the good one shows +42.9%, so halfway is +21.4%
    assert round(counterpart_pct(-30.0), 1) == 42.9
    assert middle(+40.0, +25.0, +55.0, counterpart_pct(-30.0)).verdict == LIKE_OTHER
    # a middle release that moved the other way is nearer the known end than the other one
    assert middle(+30.0, +20.0, +40.0, -30.0).verdict == LIKE_KNOWN


def test_the_cell_and_the_releases_of_a_bisection() -> None:
    spec = parse_spec(DEFAULT_SPEC.format(good="mysql-5.7.22", bad="mysql-8.0.31"), "default")
    assert CellChoice.parse(None, spec) == CellChoice("128M", "oltp_read_only", 1)
    assert CellChoice.parse("ro-local 128M oltp_read_only 4t", spec) == CellChoice(
        "128M", "oltp_read_only", 4
    )
    with pytest.raises(OltplabError, match="expected"):
        CellChoice.parse("128M 4t", spec)
    assert releases_between("mariadb-10.11.5", "mariadb-11.4.5", None) == [
        "mariadb-10.11.5", "mariadb-10.11.19", "mariadb-11.4.5",
    ]  # fmt: skip
    assert releases_between("mysql-8.0.31", "mysql-9.7.4", None) == ["mysql-8.0.31", "mysql-9.7.4"]
    mine = parse_spec(
        "engines = [" + ", ".join(
            f'{{name = "r{i}", source = {{debian = "mariadb-server-core"}}}}' for i in range(1, 6)
        ) + "]",
        "spec",
    )  # fmt: skip
    assert releases_between("r2", "r4", mine) == ["r2", "r3", "r4"]
    with pytest.raises(OltplabError, match="must come before"):
        releases_between("r4", "r2", mine)
    with pytest.raises(OltplabError, match="different families"):
        releases_between("mariadb-10.11.5", "mysql-8.0.31", None)


def test_perf_script_folds_into_stacks_and_a_flame_graph(tmp_path: Path) -> None:
    stacks = fold(PERF_SCRIPT.read_text().splitlines())
    assert stacks and sum(stacks.values()) > 50
    assert all(";" in s or s for s in stacks)
    # root first: every stack of the server's threads starts at its thread entry
    roots = {s.split(";")[0] for s in stacks}
    assert roots & {"clone3", "clone", "__clone3", "[libc.so.6]", "start_thread"}
    after = Profile("r4", {s: n / 100 for s, n in stacks.items()}, sum(stacks.values()), 100)
    doubled = {s: 2 * w if "log" in s.lower() else w for s, w in after.stacks.items()}
    before = Profile("r3", after.stacks, after.samples, 100)
    changed = Profile("r4", doubled, after.samples, 100)
    functions = gained_most(before, changed)
    assert functions[0].gained >= functions[-1].gained
    # What grew is the functions that ran longer themselves, not their callers.
    grown = {s.rsplit(";", 1)[-1] for s in doubled if "log" in s.lower()}
    assert functions[0].function in grown and functions[0].gained > 0
    assert not {"start_thread", "clone3", "clone"} & {f.function for f in functions if f.gained}
    html = page(before, changed, functions)
    assert html.count('class="frame"') > 10 and '<table id="functions">' in html


def test_the_settings_diff_leaves_out_what_names_an_instance() -> None:
    """Ports, ids (MariaDB's server_uid differs for every instance) and paths always
    differ between two servers; only what changes behaviour is listed."""
    variables = {
        ("r3", "2G"): {"server_uid": "u1", "port": "3306", "datadir": "/a/",
                       "innodb_flush_method": "O_DIRECT"},
        ("r4", "2G"): {"server_uid": "u2", "port": "3307", "datadir": "/b/",
                       "innodb_flush_method": "fsync"},
    }  # fmt: skip
    dataset = cast(Dataset, SimpleNamespace(variables=variables))
    assert setting_differences(dataset, "r3", "r4") == [
        ("innodb_flush_method", "O_DIRECT", "fsync")
    ]
