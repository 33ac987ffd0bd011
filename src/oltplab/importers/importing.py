"""What `oltplab import` asks for, and what it tells: the files it could not read and why,
what it set aside or took from an oltplab run's records, and the cells it imported,
updated or flagged."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oltplab.base.asking import argument, option, results_option
from oltplab.base.errors import EXIT_BAD_INPUT
from oltplab.base.telling import Note, Rows, Said, Told
from oltplab.base.wording import shown
from oltplab.importers.ingest import ImportReport, import_into
from oltplab.importers.mapping import load_map
from oltplab.importers.scan import ScannedTree, scan_tree


@dataclass(frozen=True, kw_only=True)
class ImportAsked:
    source: Path = argument(
        "A tree of sysbench outputs: benchmark_logs, benchmark_logs_read_only, "
        "benchmark_remote_logs[_read_only], benchmark_logs_<workload>, or a folder holding "
        "several of them; any other layout with --map.",
        "SOURCE",
    )
    results: Path = results_option()
    map_file: Path | None = option(
        None,
        "A TOML file saying which files are which cells, for layouts that cannot be guessed "
        "(docs/tutorials/import-results.md: a mapping file).",
        "--map",
    )

    def imported(self) -> Told:
        """The tree read whole before anything is made, then imported; a tree with no cell
        in it makes nothing, and is refused (exit 2) with what was found instead."""
        layout = load_map(self.map_file) if self.map_file is not None else None
        tree = scan_tree(self.source, layout, self.results)
        said: list[Said] = []
        if tree.unrecognised:
            said.append(Note("Not imported:"))
            for path, why in tree.unrecognised:
                said.append(Note(f"  {shown(path.relative_to(tree.source))}: {why}"))
        if not tree.groups:
            said += [Note(f"warning: {warning}") for warning in tree.warnings]
            nothing = f"error: {shown(self.source)}: nothing imported: {tree.nothing_found()}"
            return Told((*said, Note(nothing)), exit_status=EXIT_BAD_INPUT)
        report = import_into(tree, self.results)
        return Told((*said, *self._said(tree, report)), f"oltplab report {self.results}")

    def _said(self, tree: ScannedTree, report: ImportReport) -> list[Said]:
        said: list[Said] = [Note(f"warning: {warning}") for warning in report.warnings]
        for earlier, rerun in tree.superseded:
            said.append(
                f"{shown(earlier.relative_to(tree.source))}: set aside, measured again in "
                f"{shown(rerun.name)}"
            )
        if report.recorded is not None:
            said.append(
                f"{shown(report.recorded)}: an oltplab results directory; its engine names, "
                "spec, runs and cells' flags and notes taken from its run.json and journal.jsonl"
            )
        if tree.warm_ups:
            said.append(
                f"{len(tree.warm_ups)} warm-up output(s) recognised and kept out of the cells, "
                "as the run that wrote them did"
            )
        listed = f"; {len(tree.unrecognised)} file(s) not imported (listed)"
        said.append(
            f"{self.source}: {report.imported} cell(s) imported, {report.updated} updated, "
            f"{report.unchanged} unchanged, into {self.results}"
            + (listed if tree.unrecognised else "")
        )
        if report.flagged:
            said.append(Rows("Flagged cells", ("cell", "flags"), tuple(report.flagged)))
        return said
