"""Numbers and labels the way the report prints them (Markdown and HTML alike)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from oltplab.analysis.estimate import Comparison, Estimate
from oltplab.base.sizes import format_size

SCENARIO_TITLES = {
    "rw-local": "Read-write, local",
    "ro-local": "Read-only, local",
    "rw-network": "Read-write, network",
    "ro-network": "Read-only, network",
}

CROSS_FAMILY = (
    "Cross-family comparison ({kinds}): the same sysbench workload and dataset through "
    "each server's own driver (mysql, pgsql). One configuration intent is translated per "
    "family (buffer pool = shared_buffers, redo capacity = max_wal_size, "
    "flush_log_at_trx_commit = synchronous_commit, doublewrite = full_page_writes, binary "
    "log = wal_level; see Configuration in report.md), so a difference measures two different "
    "servers with their own storage engines and defaults, not one setting."
)


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table; a | or a line break inside a cell cannot break it."""

    def escape(cell: str) -> str:
        return cell.replace("|", "\\|").replace("\n", " ")

    lines = [
        "| " + " | ".join(escape(h) for h in header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    lines += ["| " + " | ".join(escape(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def number(value: float | None) -> str:
    """Thousands separators, no decimals for large values: 13385.4 -> "13,385"."""
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.2f}".rstrip("0").rstrip(".") if value % 1 else f"{value:,.0f}"


def percent(value: float | None) -> str:
    """Sign and one decimal: -20.2%, +4.2%."""
    return "-" if value is None else f"{value:+.1f}%"


def ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def setting(name: str, value: str | None) -> str:
    """Byte sizes in MySQL's own spelling, everything else as the server printed it."""
    if value is None or value == "":
        return "-"
    if (name.endswith(("_size", "_capacity", "_buffers")) or name == "redo capacity") and (
        value.isdigit()
    ):
        return format_size(int(value))
    return value


def scenario_title(scenario: str, workloads: dict[str, dict[str, Any]] | None = None) -> str:
    """ "Read-write, local", or a workload's name and place with what it runs:
    "balanced, local (50% point selects / 50% index updates)"."""
    short, _, where = scenario.rpartition("-")
    title = SCENARIO_TITLES.get(scenario, f"{short}, {where}")
    workload = {"rw": "oltp_read_write", "ro": "oltp_read_only"}.get(short, short)
    detail = describe_workload(workload, (workloads or {}).get(workload, {}))
    return f"{title} ({detail})" if detail else title


def describe_workload(name: str, facts: dict[str, Any]) -> str:
    """What a workload runs, in a few words; empty for a default test run as it comes."""
    parts = []
    if "read_percent" in facts:
        parts.append(
            f"{facts['read_percent']}% point selects / {facts['write_percent']}% index updates"
        )
    elif "script" in facts:
        sha = str(facts.get("script_sha256", ""))[:12]
        parts.append(f"script {Path(facts['script']).name}, sha256 {sha}")
    elif facts.get("test", name) != name:
        parts.append(str(facts["test"]))
    rand_type = facts.get("rand_type", "uniform")
    if rand_type != "uniform":
        pareto_h = facts.get("rand_pareto_h")
        parts.append(rand_type + (f" h={pareto_h}" if pareto_h is not None else ""))
    parts += [f"{key}={value}" for key, value in facts.get("options", {}).items()]
    return ", ".join(parts)


_BACKTICKS = re.compile(r"`+")
# A link's target with a scheme (javascript:, https:) or a host (//): never the report's own.
_LINK_ELSEWHERE = re.compile(r"\]\((?=\s*<?\s*(?:[A-Za-z][A-Za-z0-9+.-]*:|//))")


# What a Markdown viewer would take for HTML: a tag's opening (<b, </b, <!--, <?) or an
# entity (&lt;, &#60;). A lone `>` or `&` is text, and an arrow stays `->` in the file.
_HTML_OPENING = re.compile(r"<(?=[A-Za-z/!?])|&(?=#?\w+;)")


def code(name: str) -> str:
    """A name (a results folder's, a file's) as a Markdown code span nothing in it can end
    or leave: fenced by one backtick more than its longest run of them, spaced off a
    backtick at either end (CommonMark), on one line (a blank line ends the paragraph)."""
    text = re.sub(r"[\r\n]", " ", name)
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _code_spans(line: str) -> list[tuple[int, int]]:
    """Where a CommonMark reader sees code spans: a run of backticks not escaped by a
    backslash, up to the next run of the same length; a run with none is text."""
    spans: list[tuple[int, int]] = []
    runs = [run.span() for run in _BACKTICKS.finditer(line)]
    done = 0
    for index, (start, end) in enumerate(runs):
        if start < done:
            continue
        before = line[done:start]
        if (len(before) - len(before.rstrip("\\"))) % 2:
            start += 1  # an escaped backtick is text; the rest of its run may open a span
        length = end - start
        closing = next((e for s, e in runs[index + 1 :] if s >= end and e - s == length), None)
        if length and closing is not None:
            spans.append((start, closing))
            done = closing
    return spans


def without_html(line: str) -> str:
    """A Markdown line whose names (folder names of an imported tree, engine names) can
    carry no HTML into a viewer: what would open a tag or an entity is escaped outside
    code spans, which show their text as it is anyway, and so is a link to anywhere but a
    file beside the report (the report's own are its charts)."""

    def escape(text: str) -> str:
        text = _HTML_OPENING.sub(lambda m: "&lt;" if m.group(0) == "<" else "&amp;", text)
        return _LINK_ELSEWHERE.sub(r"]\\(", text)

    out, last = [], 0
    for start, end in _code_spans(line):
        out += [escape(line[last:start]), line[start:end]]
        last = end
    return "".join(out) + escape(line[last:])


def estimate(value: Estimate | None, shown: str = "{}") -> str:
    """1,234 [1,201, 1,266]; without an interval, what stands in its way."""
    if value is None:
        return "-"
    point = shown.format(number(value.point))
    if value.low is None or value.high is None:
        return f"{point} ({value.method})"
    return f"{point} [{shown.format(number(value.low))}, {shown.format(number(value.high))}]"


def with_interval(versus: Comparison | None) -> str:
    """-20.2% [-23.1, -17.0]; an undecided comparison says why instead of an interval."""
    return "-" if versus is None else versus.change()
