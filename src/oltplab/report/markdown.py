"""The report as Markdown: a summary, then its sections in order, each a function of the
analysis and the charts drawn for it (paths relative to the report) giving Markdown lines,
empty when the data has nothing for it. A new section is one module with such a function
and one entry in `SECTIONS`; `register` appends one (tests/fast/test_report_sections.py
adds its own). report.html shows the same lines (html.render), so both say the same."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from oltplab.analysis.model import Analysis
from oltplab.report import (
    comparison_sections,
    diagnostics,
    environment,
    latency_sections,
    precision_section,
    summary,
    transactions_section,
)
from oltplab.report.format import without_html

Section = Callable[[Analysis, list[Path]], list[str]]

SECTIONS: list[Section] = [
    environment.environment,
    environment.configuration,
    comparison_sections.results,
    comparison_sections.progression,
    comparison_sections.differences,
    comparison_sections.findings,
    comparison_sections.relative,
    comparison_sections.stability,
    comparison_sections.pairwise,
    diagnostics.flags,
    diagnostics.telemetry,
    diagnostics.network,
    diagnostics.machines,
    comparison_sections.changes,
    latency_sections.distributions,
    latency_sections.curves,
    latency_sections.capacity,
    latency_sections.omission,
    precision_section.section,
    transactions_section.section,
]


def register(section: Section) -> None:
    """Adds a section after the others."""
    SECTIONS.append(section)


# A section's heading: `## 16. Title`, or `## 16a. Title` for a part of section 16.
_HEADING = re.compile(r"^## (\d+)([a-z]?)\. ")


def numbered(lines: list[str]) -> list[str]:
    """Headings numbered 1, 2, 3... in the order the sections appear, whichever a run has;
    a part (16a) keeps the number its section got, or becomes a section of its own when
    that section is not there. The numbers the modules give only say the reference's order."""
    out, number, parent = [], 0, None
    for line in lines:
        if (match := _HEADING.match(line)) is None:
            out.append(line)
            continue
        whole, part = match.groups()
        if part and whole == parent:
            shown = f"{number}{part}"
        else:
            number += 1
            parent, shown = whole, str(number)
        out.append(f"## {shown}. {line[match.end() :]}")
    return out


@dataclass(frozen=True)
class Document:
    """The report: its title as plain text, its summary and its numbered sections as
    Markdown lines in which no name can carry HTML or a link elsewhere."""

    title: str
    summary: list[str]
    sections: list[str]


def document(analysis: Analysis, charts: list[Path]) -> Document:
    body = []
    for section in SECTIONS:
        body += section(analysis, charts)
    return Document(
        "oltplab report: " + ", ".join(str(p) for p in analysis.dataset.sources),
        [without_html(line) for line in summary.summary(analysis)],
        [without_html(line) for line in numbered(body)],
    )


def text(found: Document) -> str:
    return "\n".join([without_html(f"# {found.title}"), "", *found.summary, *found.sections])


def render(analysis: Analysis, charts: list[Path]) -> str:
    return text(document(analysis, charts))
