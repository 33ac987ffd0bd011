"""Import never loses or merges silently: engines are told apart by their whole folder
names, variants and unknown families are imported with a word, file names with extra
tokens are read, every other file that looks like sysbench output is listed, and a
mapping file reads layouts that cannot be guessed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from oltplab.analysis.dataset import load
from oltplab.importers.naming import cell_name, engine_folder
from tests.support.cli import oltplab
from tests.support.synthetic import sysbench_text

FORMATS = Path(__file__).parent.parent / "data" / "sysbench" / "formats"


def write(path: Path, tps: float = 100.0, threads: int = 4) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(sysbench_text([tps] * 30, threads))


def summary(root: Path, results: str = "res") -> list[dict]:
    done = oltplab("export", results, "--format", "json", cwd=root)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_names_say_family_version_and_variant() -> None:
    assert engine_folder("mariadb", "10.11.16-MariaDB-ubu2204").short_name == "mariadb-10.11.16"
    thp = engine_folder("mariadb", "11.8.6-MariaDB-ubu2404-thp")
    assert (thp.family, thp.version, thp.variant, thp.short_name) == (
        "mariadb", "11.8.6", "thp", "mariadb-11.8.6-thp",
    )  # fmt: skip
    assert engine_folder("mariadb-thp", "11.8.6-MariaDB-ubu2404").short_name == (
        "mariadb-11.8.6-thp"
    )
    assert engine_folder("mysql-non-pgo", "8.4.8").short_name == "mysql-8.4.8-non-pgo"
    assert engine_folder("percona-server-thp", "8.4.7-7").family == "percona-server"
    seekdb = [engine_folder("seekdb", f"5.7.25-OceanBase-seekdb-v1.{n}.0.0") for n in (1, 2)]
    assert [e.family for e in seekdb] == ["unknown", "unknown"]
    assert seekdb[0].short_name != seekdb[1].short_name
    # a folder the family does not name, whose version does
    assert engine_folder("custom", "9.7.0-MariaDB").family == "mariadb"
    # the server's "-log" (a log is on) is a setting of the run: oltplab's own folders
    assert engine_folder("mariadb", "10.11.5-MariaDB-log").short_name == "mariadb-10.11.5"


def test_file_names_with_extra_tokens() -> None:
    found = cell_name("run1_5M_Tier12G_tp10_os2_RW_64th.sysbench.txt")
    assert not isinstance(found, str)
    assert (found.tier, found.vars_tiers, found.threads, found.repetition) == (
        "12G-5M-tp10-os2", ("12G",), 64, 1,
    )  # fmt: skip
    concur = cell_name("Tier12G_Concur16_128th.sysbench.log")
    assert not isinstance(concur, str) and (concur.tier, concur.threads) == ("12G-Concur16", 128)
    assert "Tier<size>" in str(cell_name("res_64th.sysbench.txt"))
    assert "not a sysbench output name" in str(cell_name("res.txt"))


def test_an_oltplab_runs_own_files_import_as_it_measured_them(tmp_path: Path) -> None:
    """Warm-ups are recognised (not cells, not refused); a cell measured again by
    --rerun-disturbed is its latest measurement, the earlier one set aside and said so."""
    folder = tmp_path / "tree" / "benchmark_logs" / "mariadb" / "10.11.5-MariaDB-log"
    folder.mkdir(parents=True)
    for name, tps in (("Tier128M_RW_warmupA", 50.0), ("Tier128M_RW_warmupB", 60.0),
                      ("Tier128M_RW_1th", 100.0), ("Tier128M_RW_1th_again1", 120.0),
                      ("run2_Tier128M_RW_1th", 110.0)):  # fmt: skip
        (folder / f"{name}.sysbench.txt").write_text(sysbench_text([tps] * 30, 1))
    (tmp_path / "tree" / ".work" / "mariadb-10.11.5").mkdir(parents=True)
    (tmp_path / "tree" / ".work" / "mariadb-10.11.5" / "prepare.sysbench.txt").write_text(
        sysbench_text([1.0] * 3, 1)
    )
    done = oltplab("import", "tree", "-r", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())
    assert "Tier128M_RW_1th.sysbench.txt: set aside, measured again in" in said
    assert "2 warm-up output(s) recognised" in said and "2 cell(s) imported" in said
    assert not done.stderr.strip(), done.stderr
    cells = load([tmp_path / "out"]).cells
    assert {(c.engine, c.repetition, c.tps) for c in cells} == {
        ("mariadb-10.11.5", 1, 120.0), ("mariadb-10.11.5", 2, 110.0)
    }  # fmt: skip


def test_two_folders_of_one_version_are_two_engines(tmp_path: Path) -> None:
    for folder in ("11.8.6-MariaDB-ubu2404", "11.8.6-MariaDB-ubu2404-thp"):
        for threads in (1, 4):
            write(
                tmp_path
                / "data/benchmark_logs/mariadb"
                / folder
                / f"Tier2G_RW_{threads}th.sysbench.txt",
                threads=threads,
            )
    for engine, db in (("mariadb-thp", "11.8.6-MariaDB-ubu2404"), ("mysql", "8.4.8")):
        write(tmp_path / "data/benchmark_logs" / engine / db / "Tier2G_RW_1th.sysbench.txt")
    first = oltplab("import", "data", "-r", "res", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "6 cell(s) imported, 0 updated, 0 unchanged" in first.stdout
    engines = sorted({r["engine"] for r in summary(tmp_path)})
    # mariadb-thp/11.8.6-MariaDB-ubu2404 and mariadb/11.8.6-MariaDB-ubu2404-thp would share
    # a name, so both go by their whole folder names; the other two keep the short one
    assert engines == [
        "mariadb-11.8.6",
        "mariadb-11.8.6-MariaDB-ubu2404-thp",
        "mariadb-thp-11.8.6-MariaDB-ubu2404",
        "mysql-8.4.8",
    ]
    assert "would also be mariadb-11.8.6-thp" in first.stderr
    again = oltplab("import", "data", "-r", "res", cwd=tmp_path)
    assert "0 cell(s) imported, 0 updated, 6 unchanged" in again.stdout, again.stderr


def test_a_variant_folder_and_an_unknown_family(tmp_path: Path) -> None:
    write(
        tmp_path / "data/benchmark_logs/mariadb/11.8.6-MariaDB-ubu2404/Tier2G_RW_1th.sysbench.txt"
    )
    write(
        tmp_path
        / "data/benchmark_logs/mariadb-thp/11.8.6-MariaDB-ubu2404/Tier2G_RW_1th.sysbench.txt",
        90,
    )
    for n in (1, 2):
        write(
            tmp_path
            / f"data/benchmark_logs/seekdb/5.7.25-OceanBase-seekdb-v1.{n}.0.0/Tier2G_RW_1th.sysbench.txt"
        )
    done = oltplab("import", "data", "-r", "res", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "seekdb: not a family oltplab knows" in done.stderr
    rows = {r["engine"]: r for r in summary(tmp_path)}
    assert rows["mariadb-11.8.6-thp"]["family"] == "mariadb"
    assert rows["mariadb-11.8.6-thp"]["tps_whole_run"] == 90.0
    assert {r["family"] for name, r in rows.items() if name.startswith("seekdb")} == {"unknown"}
    assert len(rows) == 4
    dataset = load([tmp_path / "res"])
    assert dataset.engines["mariadb-11.8.6-thp"].server_version_shown == (
        "not recorded (folder 11.8.6-MariaDB-ubu2404)"
    )
    # the thp variant is a member of its family's version progression; seekdb is in none
    progression = oltplab("export", "res", "-t", "progression", "-f", "json", cwd=tmp_path)
    found = json.loads(progression.stdout)
    assert [(r["family"], r["version"]) for r in found] == [("mariadb", "11.8.6")]


def test_file_names_with_extra_tokens_import_as_tiers(tmp_path: Path) -> None:
    folder = tmp_path / "data/benchmark_logs/mysql/8.0.45"
    write(folder / "run1_5M_Tier12G_tp10_os2_RW_64th.sysbench.txt", threads=64)
    write(folder / "run2_5M_Tier12G_tp10_os2_RW_64th.sysbench.txt", threads=64)
    write(folder / "Tier12G_Concur16_64th.sysbench.txt", threads=64)
    write(folder / "Tier2G_RW_4th.sysbench.log")
    (folder / "Tier12G.vars.txt").write_text(
        "version\t8.0.45\ninnodb_buffer_pool_size\t12884901888\n"
    )
    done = oltplab("import", "data", "-r", "res", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = summary(tmp_path)
    assert sorted((r["tier"], r["repetition"]) for r in rows) == [
        ("12G-5M-tp10-os2", 1), ("12G-5M-tp10-os2", 2), ("12G-Concur16", 1), ("2G", 1),
    ]  # fmt: skip
    dataset = load([tmp_path / "res"])
    # the variables of Tier12G hold for every 12G cell; SELECT VERSION() is from them
    assert dataset.variables[("mysql-8.0.45", "12G-Concur16")]["version"] == "8.0.45"
    assert dataset.engines["mysql-8.0.45"].server_version_shown == "8.0.45"


def test_unrecognised_files_are_listed_and_nothing_is_made(tmp_path: Path) -> None:
    shutil.copy(FORMATS / "v1.0_ro_2th_10s.txt", tmp_path / "res.txt")
    archive = tmp_path / "series26/res02"
    archive.mkdir(parents=True)
    shutil.copy(FORMATS / "v0.5_new_ro_256th_2s.txt", archive / "sysbench.ro.128.res")
    odd = tmp_path / "benchmark_logs/mysql/8.0.45"
    odd.mkdir(parents=True)
    shutil.copy(FORMATS / "v0.4_ro_128th.txt", odd / "oltp_run.sysbench.txt")
    (tmp_path / "notes.txt").write_text("not a benchmark\n")
    done = oltplab("import", ".", "-r", "res", cwd=tmp_path)
    assert done.returncode == 2
    for name in ("res.txt", "sysbench.ro.128.res", "oltp_run.sysbench.txt"):
        assert name in done.stderr
    assert "notes.txt" not in done.stderr
    assert "Tier<size> or <N>th" in done.stderr
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith("error: .: nothing imported: none of the 3 file(s) listed above is a cell")
    )
    assert not (tmp_path / "res").exists()


def test_every_format_imports_with_its_own_percentile_and_reason(tmp_path: Path) -> None:
    folder = tmp_path / "data/benchmark_logs/mysql/8.0.45"
    folder.mkdir(parents=True)
    for threads, name in enumerate(sorted(p.name for p in FORMATS.glob("v*.txt")), start=1):
        shutil.copy(FORMATS / name, folder / f"Tier2G_RW_{threads}th.sysbench.txt")
    done = oltplab("import", "data", "-r", "res", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = {r["threads"]: r for r in summary(tmp_path)}
    by_file = dict(enumerate(sorted(p.name for p in FORMATS.glob("v*.txt")), start=1))
    fatal = next(t for t, n in by_file.items() if "fatal" in n)
    p99 = [t for t, n in by_file.items() if "p99" in n]
    assert rows[fatal]["status"] == "failed"
    flags = oltplab("export", "res", "-t", "flags", "-f", "json", cwd=tmp_path)
    reasons = {r["threads"]: r["reason"] for r in json.loads(flags.stdout)}
    assert reasons[fatal] == "sysbench said: FATAL: error 1040: Too many connections"
    done_rows = [r for r in rows.values() if r["status"] == "done"]
    assert len(done_rows) == len(by_file) - 1  # all but the fatal one
    # latency under the percentile each run used, never another's column
    for threads in p99:
        assert rows[threads]["lat_p99_ms"] is not None and rows[threads]["lat_p95_ms"] is None
    assert all(r["lat_p95_ms"] is not None for t, r in rows.items() if t not in p99 and t != fatal)
    # no complete run is flagged for its interval, or for having none
    assert all("intervals" not in r["flags"] and "truncated" not in r["flags"] for r in done_rows)
    report = oltplab("report", "res", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    md = (tmp_path / "res/report/report.md").read_text()
    assert "**p99 latency (ms) by thread count, tier 2G (rw-local)**" in md
    assert "**p95 latency (ms) by thread count, tier 2G (rw-local)**" in md


def test_a_small_error_rate_stays_in_the_findings(tmp_path: Path) -> None:
    folder = tmp_path / "data/benchmark_logs/mysql/8.0.45"
    folder.mkdir(parents=True)
    (folder / "Tier2G_RW_1th.sysbench.txt").write_text(sysbench_text([100.0] * 900, 1))
    # one deadlock in 900 s at 128 threads, where the peak is
    (folder / "Tier2G_RW_128th.sysbench.txt").write_text(
        sysbench_text([900.0] * 900, 128, errors_per_s=1 / 900)
    )
    # an error in every tenth transaction is a doubt
    (folder / "Tier2G_RW_4th.sysbench.txt").write_text(
        sysbench_text([300.0] * 900, 4, errors_per_s=30.0)
    )
    assert oltplab("import", "data", "-r", "res", cwd=tmp_path).returncode == 0
    assert oltplab("report", "res", cwd=tmp_path).returncode == 0
    md = (tmp_path / "res/report/report.md").read_text()
    assert "| Saturation point | rw-local | 2G | mysql-8.0.45 | peak 900 TPS at 128 threads |" in md
    left = md[md.index("Left out of these findings") :].split("\n\n")[1]
    assert "| rw-local | mysql-8.0.45 | 2G | 4 | 1 | errors (10% of transactions) |" in left
    assert "| 128 |" not in left
    assert "errors (0.00012% of transactions, too few to matter)" in md


def test_an_imported_freeze_is_stored_as_a_stall_and_left_out_of_the_findings(
    tmp_path: Path,
) -> None:
    """The server SIGSTOPped for 30 s in a 6 s cell (a real recording): imported, the cell
    is flagged with where it stalled, and does not count as a clean cell."""
    folder = tmp_path / "data/benchmark_logs/mariadb/10.11.19-MariaDB-0+deb12u1-log"
    folder.mkdir(parents=True)
    (folder / "Tier128M_RW_1th.sysbench.txt").write_text(sysbench_text([100.0] * 30, 1))
    shutil.copy(
        FORMATS.parent / "server_stopped_30s_in_6s_cell_2th.sysbench.txt",
        folder / "Tier128M_RW_2th.sysbench.txt",
    )
    assert oltplab("import", "data", "-r", "res", cwd=tmp_path).returncode == 0
    [stalled] = [c for c in load([tmp_path / "res"]).cells if c.threads == 2]
    assert (stalled.status, stalled.suspect_flags) == ("done", ("stall",))
    assert "stall 3-31 s" in stalled.notes
    assert oltplab("report", "res", cwd=tmp_path).returncode == 0
    md = (tmp_path / "res/report/report.md").read_text()
    left = md[md.index("Left out of these findings") :].split("\n\n")[1]
    assert "| rw-local | mariadb-10.11.19-0+deb12u1 | 128M | 2 | 1 | stall |" in left, left


def test_a_mapping_file_reads_a_layout_that_cannot_be_guessed(tmp_path: Path) -> None:
    for series, run in (("26", "01"), ("26", "02"), ("27", "01")):
        folder = tmp_path / f"archive/series{series}/res{run}"
        folder.mkdir(parents=True)
        for mode, source in (
            ("ro", "v0.5_new_ro_256th_2s.txt"),
            ("rw", "v0.5_old_rw_64th_10s_p99.txt"),
        ):
            shutil.copy(
                FORMATS / source, folder / f"sysbench.{mode}.{128 if mode == 'ro' else 64}.res"
            )
    (tmp_path / "archive/series27/res01/sysbench.xx.8.res").write_text("sysbench 0.5:\n")
    (tmp_path / "map.toml").write_text(
        """
[[files]]
pattern = "series{series}/res{run}/sysbench.{mode}.{threads}.res"
engine = "mariadb-s{series}"
family = "mariadb"
version = "10.{series}"
repetition = "{run}"
threads = "{threads}"
workload = "{mode}"

[files.values.mode]
ro = "oltp_read_only"
rw = "oltp_read_write"
xx = "bad name!"
"""
    )
    done = oltplab("import", "archive", "-r", "res", "--map", "map.toml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "6 cell(s) imported" in done.stdout
    assert "workload 'bad name!' is not a name" in done.stderr
    rows = summary(tmp_path)
    assert sorted({(r["engine"], r["version"], r["workload"]) for r in rows}) == [
        ("mariadb-s26", "10.26", "oltp_read_only"), ("mariadb-s26", "10.26", "oltp_read_write"),
        ("mariadb-s27", "10.27", "oltp_read_only"), ("mariadb-s27", "10.27", "oltp_read_write"),
    ]  # fmt: skip
    assert sorted(r["repetition"] for r in rows if r["engine"] == "mariadb-s26") == [1, 1, 2, 2]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "[[files]]\npattern = 'a/{x}.res'\nengine = 'e'\nfamily = 'oracle'\nthreads = '1'\n",
            "files.0.family: expects one of mysql, mariadb",
        ),
        (
            "[[files]]\npattern = 'a/{x}.res'\nengine = 'e-{y}'\nfamily = 'mysql'\nthreads = '1'\n",
            "files[0].engine: {y} is not a placeholder of its pattern",
        ),
        ("files = [", "not valid TOML"),
        ("[[files]]\npattern = 'a'\nfamily = 'mysql'\nthreads = '1'\n", "files.0.engine"),
    ],
)
def test_a_bad_mapping_file_is_one_line(tmp_path: Path, text: str, said: str) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "map.toml").write_text(text)
    done = oltplab("import", "src", "-r", "res", "--map", "map.toml", cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "map.toml" in lines[0] and said in lines[0], done.stderr
    assert not (tmp_path / "res").exists()
