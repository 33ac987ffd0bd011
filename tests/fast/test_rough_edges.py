"""What a newcomer hit: progress in a log file, help texts, listings and tables at 80
columns."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from oltplab.cli.display import PlainDisplay, display_for, duration_text, rows_table
from oltplab.distribute.progress import shards_rows
from tests.support.cli import oltplab


def test_progress_into_a_file_is_plain_lines_with_the_share_done_and_an_eta() -> None:
    out = io.StringIO()
    console = Console(file=out, width=80)
    display = display_for(console)
    assert isinstance(display, PlainDisplay)  # a file is no terminal
    display.start(100)
    display.phase("mysql-8.0.31 128M oltp_read_only 1 thread: measure", 50)
    display.advance(10)  # within the minute: no line
    display.note("[green]done[/green] mariadb-10.11.5 128M oltp_read_only 1 thread")
    display.phase("mysql-8.0.31 128M oltp_read_only 4 threads: measure", 50)
    display.stop()
    lines = out.getvalue().splitlines()
    assert len(lines) == 4, lines
    assert re.fullmatch(r"\d\d:\d\d:\d\d   0% mysql-8.0.31 .*: measure", lines[0])
    assert re.search(r" 50% mysql-8.0.31 .* 4 threads: measure, ETA \d", lines[2])
    assert lines[1] == "done mariadb-10.11.5 128M oltp_read_only 1 thread"  # no markup
    assert lines[3].endswith("100% done")
    assert not re.search("[\r\x1b⠋⠙⠹━]", out.getvalue())  # no bar, spinner or escapes


def test_durations_read_as_a_person_says_them() -> None:
    assert [duration_text(s) for s in (45, 185, 7620, 97200)] == [
        "45s", "3m 05s", "2h 07m", "1d 3h 00m",
    ]  # fmt: skip


@pytest.mark.parametrize("command", ["run", "report", "status", "plan", "import", "merge"])
def test_help_names_arguments_alike_and_flags_without_a_placeholder(command: str) -> None:
    said = oltplab(command, "--help", cwd=Path.cwd()).stdout
    usage = next(line for line in said.splitlines() if "Usage:" in line)
    assert re.search(r"\{[A-Z]+\}", usage) and not re.search(r"\{[a-z_]+\}", usage), usage
    assert "<bool>" not in said
    assert "oltplab explain" not in said


def test_every_family_lists_its_releases() -> None:
    said = oltplab("engines", "list", "--family", "postgresql", cwd=Path.cwd()).stdout
    assert "postgresql-15" in said


def test_the_shards_table_fits_80_columns() -> None:
    rows = [
        {"results": "/a/long/path/of/a/distributed/run/shard-1", "shard": "1/2",
         "scheduler": "RUNNING", "node": "node-a", "done": "8", "failed": "0",
         "pending": "0", "state": "cells done; job running (8 planned)"},
        {"results": "/a/long/path/of/a/distributed/run/shard-2", "shard": "2/2",
         "scheduler": "PENDING", "node": "-", "done": "3", "failed": "1", "pending": "4",
         "state": "interrupted (its process is gone; the next run resumes it) (8 planned)"},
    ]  # fmt: skip
    out = io.StringIO()
    Console(file=out, width=80).print(rows_table(shards_rows(rows)))
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "cells done; job running" in text and "RUNNING" in text


def test_one_thread_count_is_drawn_by_engine_not_at_one_x(tmp_path: Path) -> None:
    from oltplab.analysis.dataset import load
    from oltplab.analysis.model import AnalysisOptions, analyse
    from oltplab.report.charts import plan, render
    from tests.support.synthetic import sysbench_text

    for version, tps in (("5.7.44", 300.0), ("8.0.45", 320.0), ("8.4.3", 310.0)):
        folder = tmp_path / "tree" / "benchmark_logs" / "mysql" / version
        folder.mkdir(parents=True)
        (folder / "Tier2G_RW_1th.sysbench.txt").write_text(sysbench_text([tps] * 30, 1))
    assert oltplab("import", "tree", "-r", "res", cwd=tmp_path).returncode == 0
    charts = plan(analyse(load([tmp_path / "res"]), AnalysisOptions()), tmp_path / "charts")
    titles = {chart.path.stem: chart.title for chart in charts}
    assert titles["tps_rw-local_2G"].startswith("TPS by engine")
    assert titles["releases_mysql_rw-local_2G"].startswith("Steady TPS by release, mysql")
    (tmp_path / "charts").mkdir()
    drawn = render(next(c for c in charts if c.path.stem == "tps_rw-local_2G"))
    assert drawn.stat().st_size > 1000
