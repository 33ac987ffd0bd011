"""A real run and the import of its own raw files give the same report.md (issue 47): a
Debian trixie build of MariaDB, whose folder is named by what SELECT VERSION() said
(`11.8.9-MariaDB-0+deb13u1 from Debian`), keeps the name its run gave it, and the flags,
notes, machine and spec come back with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import cells, oltplab, spec_text

pytestmark = pytest.mark.engine

ENGINES = ["mariadb-11.8.9", "mysql-8.0.31"]


def report_md(results: Path) -> str:
    """report.md with the results directory's path as `<results>`: the one thing two reports
    of the same run may differ in."""
    out = results.with_name(f"{results.name}-report")
    done = oltplab("report", str(results), "-o", str(out), cwd=results.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    return (out / "report.md").read_text().replace(str(results), "<results>")


def test_a_run_and_the_import_of_its_raw_files_give_the_same_report(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(
        spec_text(ENGINES, threads=[1, 2], measure=3, extra='[config]\nredo_capacity = "64M"\n')
    )
    run = oltplab("run", "s.toml", "--results", "out", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    measured = cells(tmp_path / "out")
    assert {r["engine"] for r in measured} == set(ENGINES)

    imported = oltplab("import", "out", "-r", "again", cwd=tmp_path)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert not imported.stderr.strip(), imported.stderr
    again = cells(tmp_path / "again")
    assert {r["engine"] for r in again} == set(ENGINES)
    assert sorted((r["engine"], r["threads"], r["flags"], r["notes"]) for r in again) == sorted(
        (r["engine"], r["threads"], r["flags"], r["notes"]) for r in measured
    )
    assert report_md(tmp_path / "again") == report_md(tmp_path / "out")
