"""Every name in a results directory is built by store/directory.py, and the importer reads
each one back to what built it: scenario, engine, tier (with its `_`, `.` and `-`),
threads, repetition, rate and earlier measurements; and what sits beside a cell is never
taken for one."""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from pathlib import Path

import pytest

from oltplab.analysis.dataset import load
from oltplab.importers.naming import (
    CellName,
    cell_name,
    engine_folder,
    is_cell_file,
    is_companion,
    is_warm_up,
    may_be_output,
    scenario_of,
    vars_tier,
)
from oltplab.plan import Cell, Scenario
from oltplab.store import directory
from oltplab.store.directory import (
    CNF,
    ERRLOG,
    STATUS,
    VARS,
    WARM_UP_A,
    WARM_UP_B,
    beside,
    cell_stem,
    engine_dir,
    output_of,
    scenario_dir,
    session_stem,
    stem_of,
    warm_up_output,
)
from tests.support.cli import oltplab
from tests.support.synthetic import sysbench_text

PACKAGE = Path(__file__).parents[2] / "src" / "oltplab"
NAMING = PACKAGE / "store" / "directory.py"

TIERS = ["128M", "2G", "1.5G", "12G-thp", "tier_a", "big_pool-2", "a_RW_b", "x.y_z-1"]
WORKLOADS = [
    ("oltp_read_write", False),
    ("oltp_read_only", True),
    ("oltp_point_select", True),
    ("balanced", False),
    ("my_mix-2", False),
]
# What a telemetry device's raw file, a profile and the session's files are called.
BESIDE_A_CELL = [(STATUS, "txt"), ("iostat", "txt"), ("engine", "jsonl"), ("load", "jsonl"),
                 ("perf", "data"), ("perf", "log"), ("perf", "folded.txt"),
                 ("pt-mysql-summary", "txt")]  # fmt: skip
BESIDE_A_SESSION = [CNF, VARS, STATUS, ERRLOG]


def cells() -> list[tuple[Cell, bool, int]]:
    """A spread of cells, each with whether its workload reads only and how many
    measurements came before it."""
    found = []
    for tier in TIERS:
        for workload, reads_only in WORKLOADS:
            for network in (False, True):
                for threads, repetition, rate, before in (
                    (1, 1, 0, 0),
                    (64, 2, 0, 0),
                    (16, 3, 500, 0),
                    (4, 1, 120, 2),
                    (128, 3, 0, 1),
                ):
                    cell = Cell("e", tier, workload, threads, repetition, network, rate)
                    found.append((cell, reads_only, before))
    return found


@pytest.mark.parametrize(("cell", "reads_only", "before"), cells(), ids=lambda v: str(v))
def test_a_cell_s_path_reads_back_as_the_cell(cell: Cell, reads_only: bool, before: int) -> None:
    folder = engine_dir("mariadb", "11.8.6-MariaDB-ubu2404", "mariadb-11.8", set())
    output = output_of(Path(scenario_dir(cell.workload, cell.network), folder,
                            cell_stem(cell, reads_only, before)))  # fmt: skip
    scenario_name, db, version, name = output.parts
    scenario = scenario_of(scenario_name)
    assert scenario is not None
    engine = engine_folder(db, version)
    named = cell_name(name)
    assert isinstance(named, CellName), named
    assert replace(scenario, rate=named.rate) == cell.scenario
    assert (engine.family, engine.version) == ("mariadb", "11.8.6")
    assert named == CellName(cell.tier, named.vars_tiers, cell.threads, cell.repetition, before,
                             cell.rate)  # fmt: skip
    assert named.vars_tiers[0] == cell.tier
    assert is_cell_file(name) and not is_warm_up(name) and not is_companion(name)
    assert stem_of(output).name == cell_stem(cell, reads_only, before)
    for kind, suffix in BESIDE_A_CELL:
        companion = beside(stem_of(output), kind, suffix).name
        assert is_companion(companion) and not may_be_output(companion, "sysbench 1.0.20")
        assert isinstance(cell_name(companion), str)


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("reads_only", [False, True])
def test_a_session_s_files_read_back_as_its_tier(tier: str, reads_only: bool) -> None:
    stem = Path(session_stem(tier, reads_only))
    assert vars_tier(beside(stem, VARS).name) == tier
    for kind in BESIDE_A_SESSION:
        assert is_companion(beside(stem, kind).name)
    for phase in (WARM_UP_A, WARM_UP_B):
        warm_up = warm_up_output(stem, phase).name
        assert is_warm_up(warm_up) and is_cell_file(warm_up)


def test_the_engine_folder_is_family_and_version() -> None:
    taken = {"mysql/8.0.45"}
    again = engine_dir("mysql", "8.0.45", "mysql-b", taken)
    assert again == "mysql/8.0.45-mysql-b"
    found = engine_folder(*again.split("/"))
    assert (found.family, found.version) == ("mysql", "8.0.45")
    assert found.short_name != engine_folder("mysql", "8.0.45").short_name


def test_the_four_reference_scenario_folders_keep_their_names() -> None:
    assert [scenario_dir(w, n) for n in (False, True) for w in ("oltp_read_write", "oltp_read_only")
            ] == ["benchmark_logs", "benchmark_logs_read_only", "benchmark_remote_logs",
                  "benchmark_remote_logs_read_only"]  # fmt: skip
    assert scenario_of("benchmark_remote_logs_balanced") == Scenario("balanced", network=True)


def test_other_layouts_still_read_token_by_token() -> None:
    """A name oltplab did not write keeps its extra tokens in the tier, rate words too."""
    found = cell_name("run3_5M_Tier128M_RW_64th_500tps.sysbench.txt")
    assert isinstance(found, CellName)
    assert (found.tier, found.vars_tiers, found.rate, found.repetition) == (
        "128M-5M-500tps", ("128M",), 0, 3,
    )  # fmt: skip
    assert vars_tier("Tier12G.vars.txt") == "12G"
    # Extra tokens only between Tier and RW read as oltplab's tier with a '_'; the variables
    # of another tree's Tier12G.vars.txt still describe it.
    extra = cell_name("Tier12G_tp10_RW_64th.sysbench.txt")
    assert isinstance(extra, CellName) and extra.vars_tiers == ("12G_tp10", "12G"), extra


def test_zero_threads_is_refused_in_either_reading() -> None:
    assert cell_name("Tier128M_RW_0th.sysbench.txt") == "its name says 0 threads"


def test_an_import_keeps_the_tier_s_underscore_and_the_cell_s_rate(tmp_path: Path) -> None:
    """Closed- and open-loop cells of one tier and thread count are two cells, and the
    files oltplab keeps beside them are neither cells nor refused, whatever they hold (an
    error log may quote sysbench)."""
    folder = tmp_path / "tree" / scenario_dir("oltp_read_write") / "mysql" / "8.0.45"
    folder.mkdir(parents=True)
    for tier, rate, tps in (("pool_a", 0, 90.0), ("128M", 0, 100.0), ("128M", 500, 80.0)):
        stem = folder / cell_stem(Cell("e", tier, "oltp_read_write", 4, 1, False, rate), False)
        output_of(stem).write_text(sysbench_text([tps] * 30, 4))
        for kind, suffix in (("engine", "jsonl"), ("load", "jsonl"), (STATUS, "txt")):
            beside(stem, kind, suffix).write_text("{}\n")
    session = folder / session_stem("128M", False)
    for kind in (ERRLOG, CNF):
        beside(session, kind).write_text("sysbench 1.0.20\n")
    done = oltplab("import", "tree", "-r", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())
    assert "3 cell(s) imported" in said and "not imported" not in said.lower(), said
    found = {(c.tier, c.rate, c.tps) for c in load([tmp_path / "out"]).cells}
    assert found == {("pool_a", 0, 90.0), ("128M", 0, 100.0), ("128M", 500, 80.0)}


# --- nothing else builds a name of the results directory -----------------------------------

# What a name of the results directory looks like, in a literal without whitespace (text
# with a space is a message or help that mentions a name, not one being built).
NAME_SHAPES = re.compile(
    r"Tier[{<0-9A-Za-z]|_R[WO](_|$)|\.sysbench\b|benchmark_(remote_)?logs|warmup[A-Z]"
    r"|\.(vars|status|cnf|errlog|perf)\.|_again\{|_\{\}tps|\{\}th$"
    r"|^(tps|relative|timeline|boxplot|releases|latency|telemetry)_\{"
    r"|\b(report\.(md|html)|gate\.(md|xml)|replay\.(csv|json)|bisect\.(md|json)|flamegraph\.html"
    r"|capacity\.json|search\.json|ledger\.sqlite|run\.json|journal\.jsonl|oltplab\.log"
    r"|pt-(mysql-)?summary\.txt)$|\.damaged|^\.rebuild"
)
# The tokens of a name, which are no path of their own.
TOKENS = {"TIER", "READ_WRITE", "READ_ONLY", "REPETITION", "THREADS", "RATE", "AGAIN",
          "WARM_UP", "SYSBENCH"}  # fmt: skip


def literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string literal but docstrings; an f-string's text with `{}`
    for each value."""
    tree = ast.parse(source)
    skipped = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            skipped.add(id(body[0].value))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skipped.update(id(v) for v in node.values)
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            found.append((node.lineno, text))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skipped
        ):
            found.append((node.lineno, node.value))
    return found


def names_built(path: Path, package: Path = PACKAGE) -> list[str]:
    source = path.read_text()
    where = path.relative_to(package)
    # A dotted module path (oltplab.workloads.kinds) is no file name either.
    found = [f"{where}:{line}: {text!r}" for line, text in literals(source)
             if not re.search(r"\s", text) and NAME_SHAPES.search(text)
             and not re.fullmatch(r"oltplab(\.\w+)+", text)]  # fmt: skip
    # A path joined with a name the directory module keeps, spelt out again.
    kept = {value for name, value in vars(directory).items()
            if name.isupper() and isinstance(value, str) and name not in TOKENS}  # fmt: skip
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
                and isinstance(node.right, ast.Constant) and node.right.value in kept):  # fmt: skip
            found.append(f"{where}:{node.lineno}: / {node.right.value!r}")
    return found


def test_no_module_but_the_directory_s_builds_a_results_name() -> None:
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) if path != NAMING
             for hit in names_built(path)]  # fmt: skip
    assert found == []


def test_the_check_sees_a_name_built_elsewhere(tmp_path: Path) -> None:
    package = tmp_path / "oltplab" / "measure"
    package.mkdir(parents=True)
    module = package / "x.py"
    module.write_text(
        '"""Tier128M_RW_4th.sysbench.txt in a docstring is fine."""\n'
        'a = f"{stem}.sysbench.txt"\n'
        'b = f"Tier{tier}_RW"\n'
        'c = folder / "charts"\n'
        'd = "a message that mentions benchmark_logs"\n'
    )
    assert [hit.split(": ", 1)[0] for hit in names_built(module, tmp_path / "oltplab")] == [
        "measure/x.py:2", "measure/x.py:3", "measure/x.py:4",
    ]  # fmt: skip
