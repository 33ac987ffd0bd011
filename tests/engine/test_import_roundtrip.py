"""A real run and the import of its own raw files give the same report.md (issue 47): the
engines keep the names the run gave them, and the flags, notes, machine and spec come back
with them. The run is the demo the first tutorial ran, which this test only reads; the
Debian build whose folder is named by what SELECT VERSION() said is tests/fast's case."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import oltplab
from tests.support.engines import cells
from tests.support.tutorial import TutorialRun


def report_md(results: Path, out: Path) -> str:
    """report.md written to `out`, with the results directory's path as `<results>`: the
    one thing two reports of the same run may differ in."""
    done = oltplab("report", str(results), "-o", str(out), cwd=out.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    return (out / "report.md").read_text().replace(str(results), "<results>")


def test_a_run_and_the_import_of_its_raw_files_give_the_same_report(
    tmp_path: Path, first_tutorial: TutorialRun
) -> None:
    demo = first_tutorial.folder / "runs" / "demo"
    measured = cells(demo)
    imported = oltplab("import", str(demo), "-r", "again", cwd=tmp_path)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert not imported.stderr.strip(), imported.stderr
    again = cells(tmp_path / "again")
    assert {r["engine"] for r in again} == {r["engine"] for r in measured}
    assert sorted((r["engine"], r["threads"], r["flags"], r["notes"]) for r in again) == sorted(
        (r["engine"], r["threads"], r["flags"], r["notes"]) for r in measured
    )
    assert report_md(tmp_path / "again", tmp_path / "again-report") == report_md(
        demo, tmp_path / "demo-report"
    )
