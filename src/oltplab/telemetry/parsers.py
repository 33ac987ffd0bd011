"""Parsers for what iostat, vmstat and mpstat print. oltplab runs them with LC_ALL=C; the
parsers still read other locales, for raw files written before that or by other tools.

Each parser returns the samples in the order printed, each with the time of day the tool
printed (seconds after midnight, None when it printed none) and its values by metric name.
Locale differences handled: decimal commas, 12-hour times with AM/PM, any date format
around the time, translated "Average" lines. Reports the tools compute since boot (the
first one of iostat and vmstat) are left out: they describe the machine's uptime,
not the cell.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from oltplab.base import metrics

Values = dict[str, float]


@dataclass(frozen=True)
class Sample:
    clock: float | None  # seconds after midnight, as printed
    values: Values


_CLOCK = re.compile(r"(?<!\d)(\d{1,2}):(\d{2}):(\d{2})(?!\d)(?:\s*([AaPp])\.?\s*[Mm]\.?)?")
_NUMBER = re.compile(r"^[-+]?\d+(?:[.,]\d+)?$")


def parse_clock(text: str) -> float | None:
    """Seconds after midnight of the first HH:MM:SS in text, honouring AM/PM."""
    match = _CLOCK.search(text)
    if match is None:
        return None
    hours, minutes, seconds = (int(g) for g in match.groups()[:3])
    meridiem = (match.group(4) or "").upper()
    if meridiem == "P" and hours < 12:
        hours += 12
    elif meridiem == "A" and hours == 12:
        hours = 0
    return float(hours * 3600 + minutes * 60 + seconds)


def parse_number(token: str) -> float | None:
    """A number as the tools print it: "75.57" or, in many locales, "75,57"."""
    if not _NUMBER.match(token):
        return None
    return float(token.replace(",", "."))


def _is_number(token: str) -> bool:
    return parse_number(token) is not None


# --- iostat -dxm -t 1 ------------------------------------------------------------------------


def parse_iostat(text: str) -> list[Sample]:
    """Extended device reports; metrics are named `<device>:<column>`."""
    reports: list[Sample] = []
    columns: list[str] = []
    clock: float | None = None
    current: Values | None = None
    for line in text.splitlines():
        tokens = line.split()
        if not tokens or line.startswith("Linux "):
            continue
        if tokens[0].rstrip(":") == "Device":
            columns = tokens[1:]
            current = {}
            reports.append(Sample(clock, current))
            clock = None
            continue
        if current is not None and columns and len(tokens) == len(columns) + 1:
            values = [parse_number(t) for t in tokens[1:]]
            if all(v is not None for v in values):
                current.update(
                    {f"{tokens[0]}:{c}": v for c, v in zip(columns, values, strict=True)}  # type: ignore[misc]
                )
                continue
        if (found := parse_clock(line)) is not None:
            clock = found
            current = None
    return reports[1:]


# --- vmstat -n -t 1 --------------------------------------------------------------------------


def parse_vmstat(text: str) -> list[Sample]:
    """One line per second; with -t the line ends with the date and time."""
    samples: list[Sample] = []
    columns: list[str] = []
    for line in text.splitlines():
        tokens = line.split()
        if not tokens:
            continue
        if tokens[0] == "r" and "b" in tokens:
            columns = [t for t in tokens if not t.isupper()]  # the timezone label is upper case
            continue
        if not columns or not _is_number(tokens[0]):
            continue
        numbers = tokens[: len(columns)]
        if len(numbers) < len(columns) or not all(_is_number(t) for t in numbers):
            continue
        values = {c: float(parse_number(t) or 0.0) for c, t in zip(columns, numbers, strict=True)}
        samples.append(Sample(parse_clock(" ".join(tokens[len(columns) :])), values))
    return samples[1:]


# --- mpstat -P ALL 1 -------------------------------------------------------------------------


def parse_mpstat(text: str) -> list[Sample]:
    """Per-CPU lines grouped by their printed time; metrics are named `<cpu>:<column>`.

    mpstat's first report already covers its first interval, so none is left out; its
    "Average" lines (translated in other locales) carry no time and are skipped.
    """
    samples: list[Sample] = []
    columns: list[str] = []
    for line in text.splitlines():
        tokens = line.split()
        if "CPU" in tokens:
            columns = tokens[tokens.index("CPU") + 1 :]
            continue
        if not columns or len(tokens) < len(columns) + 2:
            continue
        numbers = tokens[-len(columns) :]
        if not all(_is_number(t) for t in numbers):
            continue
        prefix = tokens[: -len(columns) - 1]
        clock = parse_clock(" ".join(prefix))
        if clock is None:
            continue
        cpu = tokens[-len(columns) - 1]
        if not samples or samples[-1].clock != clock or f"{cpu}:{columns[0]}" in samples[-1].values:
            samples.append(Sample(clock, {}))
        samples[-1].values.update(
            {
                f"{cpu}:{c}": float(parse_number(t) or 0.0)
                for c, t in zip(columns, numbers, strict=True)
            }
        )
    return samples


Parser = Callable[[str], list[Sample]]
PARSERS: dict[str, Parser] = {
    metrics.IOSTAT: parse_iostat,
    metrics.VMSTAT: parse_vmstat,
    metrics.MPSTAT: parse_mpstat,
}


# --- alignment -------------------------------------------------------------------------------

DAY = 86400.0


def align(
    samples: list[Sample], start_clock: float, started_after: float = 0.0
) -> list[tuple[int, Values]]:
    """Samples placed on the sysbench clock: second k covers (k-1, k] after sysbench started.

    start_clock is sysbench's start as seconds after local midnight. The tools print whole
    seconds, truncated, so a sample printed at HH:MM:SS was taken within the next second
    (half a second is added). Rounding each sample alone would let the tools' slow drift
    (their 1 s sleeps take a little longer) skip or repeat a second now and then, so the
    samples are numbered one a second from an anchor, the median of what their printed
    times say; only a sample whose time disagrees by more than 1.5 s (the tool stalled) is
    placed by its own time. Without printed times the anchor is the collector's start
    (started_after: seconds from the sysbench start, negative when it started first).
    """

    def by_clock(clock: float) -> float:
        return (clock + 0.5 - start_clock + DAY / 2) % DAY - DAY / 2

    timed = [(index, s.clock) for index, s in enumerate(samples) if s.clock is not None]
    if timed:
        anchor = round(statistics.median(by_clock(clock) - index for index, clock in timed))
    else:
        anchor = round(started_after + 1)
    placed: dict[int, Values] = {}
    for index, sample in enumerate(samples):
        second = anchor + index
        if sample.clock is not None and abs(by_clock(sample.clock) - second) > 1.5:
            second = round(by_clock(sample.clock))
        placed[second] = sample.values
    return sorted(placed.items())
