"""A small tree of sysbench outputs with known numbers, in the 2026 report's layout."""

from __future__ import annotations

from pathlib import Path

from tests.support.synthetic import sysbench_text

SECONDS = 30
# (scenario dir, db, version dir, file name) -> constant TPS, or a special case
CELLS = {
    ("benchmark_logs", "mysql", "5.7.44", "Tier2G_RW_1th"): 100,
    ("benchmark_logs", "mysql", "5.7.44", "Tier2G_RW_4th"): 300,
    ("benchmark_logs", "mysql", "5.7.44", "Tier8G_RW_1th"): 200,
    ("benchmark_logs", "mysql", "5.7.44", "Tier8G_RW_4th"): 500,
    ("benchmark_logs", "mysql", "8.0.45", "Tier2G_RW_1th"): 110,
    ("benchmark_logs", "mysql", "8.0.45", "Tier2G_RW_4th"): 270,
    ("benchmark_logs", "mysql", "8.0.45", "Tier8G_RW_1th"): 190,
    ("benchmark_logs", "mysql", "8.0.45", "Tier8G_RW_4th"): 600,
    ("benchmark_logs", "mysql", "8.0.45", "run2_Tier8G_RW_4th"): 640,
    ("benchmark_logs", "mariadb", "10.11.16-MariaDB-ubu2204", "Tier2G_RW_1th"): 120,
    ("benchmark_logs", "mariadb", "10.11.16-MariaDB-ubu2204", "Tier2G_RW_4th"): "empty",
    ("benchmark_logs", "mariadb", "10.11.16-MariaDB-ubu2204", "Tier8G_RW_1th"): 250,
    ("benchmark_logs", "mariadb", "10.11.16-MariaDB-ubu2204", "Tier8G_RW_4th"): "errors",
    # the report kept _RW_ in read-only file names; the directory says read-only
    ("benchmark_logs_read_only", "mysql", "5.7.44", "Tier8G_RW_1th"): 400,
    ("benchmark_logs_read_only", "mysql", "5.7.44", "Tier8G_RW_4th"): 1000,
    ("benchmark_logs_read_only", "mysql", "8.0.45", "Tier8G_RW_1th"): 420,
    ("benchmark_logs_read_only", "mysql", "8.0.45", "Tier8G_RW_4th"): 900,
    ("benchmark_logs_read_only", "mariadb", "10.11.16-MariaDB-ubu2204", "Tier8G_RW_1th"): 800,
    (
        "benchmark_logs_read_only",
        "mariadb",
        "10.11.16-MariaDB-ubu2204",
        "Tier8G_RW_4th",
    ): "truncated",
}
VARS = {
    ("mysql", "5.7.44"): "Variable_name\tValue\ninnodb_buffer_pool_size\t8589934592\n"
    "innodb_log_file_size\t1073741824\ninnodb_log_files_in_group\t2\n"
    "innodb_flush_log_at_trx_commit\t1\n",
    ("mysql", "8.0.45"): "+---------------------------------+------------+\n"
    "| Variable_name                   | Value      |\n"
    "+---------------------------------+------------+\n"
    "| innodb_buffer_pool_size         | 8589934592 |\n"
    "| innodb_redo_log_capacity        | 4294967296 |\n"
    "| innodb_flush_log_at_trx_commit  | 2          |\n"
    "+---------------------------------+------------+\n",
}


def build_tree(root: Path) -> Path:
    for (scenario, db, version, name), case in CELLS.items():
        folder = root / scenario / db / version
        folder.mkdir(parents=True, exist_ok=True)
        threads = int(name.rsplit("_", 1)[1].removesuffix("th"))
        mode = "ro" if scenario.endswith("read_only") else "rw"
        if case == "empty":
            text = ""
        elif case == "errors":
            text = sysbench_text([400.0] * SECONDS, threads, mode=mode, errors_per_s=2.0)
        elif case == "truncated":
            text = sysbench_text([1500.0] * SECONDS, threads, mode=mode, summary=False)
        else:
            text = sysbench_text([float(case)] * SECONDS, threads, mode=mode)
        (folder / f"{name}.sysbench.txt").write_text(text)
    for (db, version), text in VARS.items():
        (root / "benchmark_logs" / db / version / "Tier8G_RW.vars.txt").write_text(text)
    return root
