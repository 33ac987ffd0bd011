"""What sysbench printed, read back: every format of the last decade.

* 1.0 and 1.1 per-interval lines: `[ 10s ] thds: 4 tps: 1.00 qps: 20.00 (r/w/o: 14.00/4.00/
  2.00) lat (ms,95%): 9.00 err/s: 0.00 reconn/s: 0.00`;
* 0.5 lines, newer (`[  2s] threads: 8, tps: 1.00, reads: 10.00, writes: 4.00, response
  time: 9.00ms (95%), errors: 0.00, reconnects:  0.00`) and older (`reads/s:`, `writes/s:`,
  no errors); 0.4 prints none.
* Summaries: 1.0 (`SQL statistics`, `General statistics`, `Latency (ms)`), 1.1 (`Throughput`
  with `time elapsed`), 0.5 and 0.4 (`OLTP test statistics`, `deadlocks` or `ignored
  errors`, `response time` or `per-request statistics` with units and `approx. 95
  percentile`), and the `--histogram` table.

Lines may come every second or every N seconds (`Report intermediate results every N
second(s)`, else the spacing of their timestamps); a file without any is a valid
summary-only run. A per-interval 0.5 line has no `other` count: its qps is reads + writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain, islice

import numpy as np

from oltplab.base.stats import stalls

# What one per-interval line says, in the order stored.
SAMPLE_COLUMNS = (
    "second", "threads", "tps", "qps", "reads_per_s", "writes_per_s", "other_per_s",
    "lat_pct_ms", "errors_per_s", "reconnects_per_s",
)  # fmt: skip
NO_SAMPLES = np.empty((0, len(SAMPLE_COLUMNS)))


@dataclass(frozen=True)
class Interval:
    """One per-interval line."""

    second: float
    threads: int
    tps: float
    qps: float
    reads_per_s: float
    writes_per_s: float
    other_per_s: float
    lat_pct_ms: float
    errors_per_s: float
    reconnects_per_s: float


@dataclass(frozen=True)
class Summary:
    reads: int
    writes: int
    other: int
    queries: int
    transactions: int
    tps: float
    qps: float
    errors: int
    errors_per_s: float
    reconnects: int
    reconnects_per_s: float
    total_time_s: float
    events: int
    lat_min_ms: float
    lat_avg_ms: float
    lat_max_ms: float
    lat_pct_ms: float
    percentile: int
    # Seconds between two per-interval lines; None when the run printed none.
    interval_s: float | None = None

    @property
    def reads_per_s(self) -> float:
        return self.reads / self.total_time_s if self.total_time_s else 0.0

    @property
    def writes_per_s(self) -> float:
        return self.writes / self.total_time_s if self.total_time_s else 0.0

    @property
    def other_per_s(self) -> float:
        return self.other / self.total_time_s if self.total_time_s else 0.0

    @property
    def error_rate(self) -> float:
        """Ignored errors (deadlocks and the like) per transaction."""
        return self.errors / self.transactions if self.transactions else 0.0


@dataclass(frozen=True)
class SysbenchOutput:
    version: str | None
    threads: int | None
    # One row per per-interval line, columns in SAMPLE_COLUMNS order; no rows when they
    # were streamed elsewhere (an import).
    samples: np.ndarray
    summary: Summary | None
    fatal: tuple[str, ...] = field(default=())
    empty: bool = False
    # The per-interval TPS and the seconds printed, kept even when the samples are
    # streamed: the stall and gap checks need them (16 bytes a line).
    tps: np.ndarray = field(default_factory=lambda: np.empty(0))
    seconds: np.ndarray = field(default_factory=lambda: np.empty(0))
    # Seconds between per-interval lines; None without any.
    interval: float | None = None
    # `--histogram`: (latency in ms, events) per printed value. sysbench prints each value
    # to 3 decimals, so neighbouring buckets below 0.1 ms can print alike; they are summed.
    histogram: tuple[tuple[float, int], ...] = ()
    # `--rate`: the events a second offered, and per interval (second, queue length,
    # concurrency): events waiting for a thread, and threads busy.
    rate: int = 0
    queue: np.ndarray = field(default_factory=lambda: np.empty((0, 3)))
    # Errors sysbench ignored, by code (MySQL's number, PostgreSQL's SQLSTATE), as
    # oltplab's gate counted them: (code, count), most frequent first.
    ignored_errors: tuple[tuple[str, int], ...] = ()

    @cached_property
    def stalls(self) -> list[tuple[int, int]]:
        """Runs of intervals far below the level the run ran at (stats.stalls), as (first,
        last) seconds of the run, found once per output. A line printed late covers every
        interval since the one before at its average rate: a sysbench SIGSTOPped for 30 s
        prints `[ 1s ]` then `[ 31s ]`, 30 intervals of almost nothing, not one."""
        if not len(self.seconds):
            return []
        # The lines' own step (a sliced cell numbers its slices 1, 2, ...); the first line
        # covers the step from the start.
        steps = np.diff(self.seconds, prepend=0.0)
        positive = steps[steps > 0]
        spans = np.maximum(1, np.rint(steps / (positive.min() if len(positive) else 1.0)))
        found = stalls(self.tps, seconds=_stall_lines(self.interval), spans=spans)
        # A line covers its span of intervals up to the second it prints.
        starts = np.rint(self.seconds - spans * (self.interval or 1)) + 1
        return [(int(starts[first - 1]), round(self.seconds[last - 1])) for first, last in found]

    @property
    def intervals(self) -> tuple[Interval, ...]:
        return tuple(Interval(r[0], int(r[1]), *r[2:]) for r in self.samples.tolist())

    @property
    def fatal_line(self) -> str:
        """The FATAL or ALERT line that says most: the server's own error when one is quoted
        (`FATAL: error 1040: Too many connections`), else the first."""
        return next((line for line in self.fatal if _SERVER_ERROR.search(line)), self.fatal[0])

    @property
    def queue_overflowed(self) -> bool:
        """Open loop: the server fell so far behind the rate offered that sysbench's queue
        of waiting events (100,000 in sysbench 1.0) filled, and sysbench stopped."""
        return any("event queue is full" in line for line in self.fatal)

    @property
    def failure(self) -> str | None:
        """Why the output holds no result: what sysbench said, else what is missing."""
        if self.summary is not None:
            return None
        if self.fatal:
            return f"sysbench said: {self.fatal_line[:300]}"
        return "empty file" if self.empty else "no summary: the output is truncated"


def _stall_lines(interval: float | None) -> int:
    """Lines a stall must last: 3 seconds' worth, at least one line."""
    return max(1, round(3 / interval)) if interval else 3


_SERVER_ERROR = re.compile(r"\berror \d+")
_NUM = r"([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"


def _one_zero_line(number: str) -> re.Pattern[str]:
    """A 1.0 / 1.1 line; its groups are the SAMPLE_COLUMNS in order. Spaces, not any white
    space: sysbench pads with spaces only, and the narrower pattern runs several times
    faster over a long output."""
    return re.compile(
        rf"^\[ *{number}s *\] +thds: *(\d+) +tps: *{number} +qps: *{number} +"
        rf"\(r/w/o: *{number}/{number}/{number}\) +lat +\(ms,\d+%\): *{number} +"
        rf"err/s:? *{number} +reconn/s:? *{number}",
        re.MULTILINE,
    )


_ONE_ZERO = _one_zero_line(_NUM)
# Plain decimals, as sysbench prints them: tried first over a whole block, since it
# matches twice as fast; a block where it misses a line is read line by line.
_PLAIN_ONE_ZERO = _one_zero_line(r"([\d.]+)")
# 0.5: reads and writes per second, latency with its unit, errors and reconnects (newer).
_ZERO_FIVE = re.compile(
    rf"^\[ *{_NUM}s *\] +threads: *(\d+), +tps: *{_NUM}, +reads(?:/s)?: *{_NUM}, +"
    rf"writes(?:/s)?: *{_NUM}, +response time: *{_NUM}(ms|s|us) +\(\d+%\)"
    rf"(?:, +errors: *{_NUM}, +reconnects: *{_NUM})?"
)
_UNIT_MS = {"ms": 1.0, "s": 1000.0, "us": 0.001, None: 1.0, "": 1.0}


def _zero_five_row(m: re.Match[str]) -> tuple[float, ...]:
    second, threads, tps, reads, writes, latency, unit, errors, reconnects = m.groups()
    r, w = float(reads), float(writes)
    return (
        float(second), float(threads), float(tps), r + w, r, w, 0.0,
        float(latency) * _UNIT_MS[unit], float(errors or 0), float(reconnects or 0),
    )  # fmt: skip


def _samples(found: list[tuple[str, ...]]) -> np.ndarray:
    # Python's float() reads these strings faster than NumPy's own conversion does.
    count = len(found) * len(SAMPLE_COLUMNS)
    flat = np.fromiter(map(float, chain.from_iterable(found)), np.float64, count)
    return flat.reshape(len(found), len(SAMPLE_COLUMNS))


def _block_samples(lines: list[str]) -> np.ndarray:
    """The samples of a block's per-interval lines: all 1.0 lines at once when they are,
    else line by line in whichever format each is."""
    bracketed = [line.rstrip("\n") for line in lines]
    if not bracketed:
        return NO_SAMPLES
    found = _PLAIN_ONE_ZERO.findall("\n".join(bracketed))
    if len(found) == len(bracketed):
        try:
            return _samples(found)
        except ValueError:
            pass
    rows: list[tuple[float, ...]] = []
    for line in bracketed:
        if m := _ONE_ZERO.match(line):
            rows.append(tuple(map(float, m.groups())))
        elif m := _ZERO_FIVE.match(line):
            rows.append(_zero_five_row(m))
    return np.array(rows, dtype=np.float64).reshape(len(rows), len(SAMPLE_COLUMNS))


# --- the summary ----------------------------------------------------------------------------

_COUNTED = rf"{_NUM}\s+\({_NUM} per sec\.\)"
_SUMMARY_LINES = {
    "read": re.compile(rf"^\s*read:\s*{_NUM}"),
    "write": re.compile(rf"^\s*write:\s*{_NUM}"),
    "other": re.compile(rf"^\s*other:\s*{_NUM}"),
    "total": re.compile(rf"^\s*total:\s*{_NUM}\s*$"),
    "transactions": re.compile(rf"^\s*transactions:\s*{_COUNTED}"),
    "queries": re.compile(rf"^\s*queries:\s*{_COUNTED}"),
    # 0.4 and the older 0.5 count deadlocks where later versions count ignored errors.
    "errors": re.compile(rf"^\s*(?:ignored errors|deadlocks):\s*{_COUNTED}"),
    "reconnects": re.compile(rf"^\s*reconnects:\s*{_COUNTED}"),
    "total_time": re.compile(rf"^\s*(?:total time|time elapsed):\s*{_NUM}s"),
    "events": re.compile(rf"^\s*total number of events:\s*{_NUM}"),
}
_LATENCY_SECTIONS = ("Latency (ms):", "response time:", "per-request statistics:")
_LATENCY_LINES = {
    "min": re.compile(rf"^\s*min:\s*{_NUM}(ms|s|us)?\s*$"),
    "avg": re.compile(rf"^\s*avg:\s*{_NUM}(ms|s|us)?\s*$"),
    "max": re.compile(rf"^\s*max:\s*{_NUM}(ms|s|us)?\s*$"),
    "pct": re.compile(rf"^\s*(?:approx\.\s+)?(\d+)(?:th)? percentile:\s*{_NUM}(ms|s|us)?\s*$"),
}
_VERSION = re.compile(r"^sysbench\s+(\d[^\s:]*)")
_THREADS = re.compile(r"^Number of threads:\s*(\d+)")
_INTERVAL_SAID = re.compile(r"^Report intermediate results every (\d+(?:\.\d+)?) second")
_RATE_SAID = re.compile(r"^Target transaction rate: (\d+)/sec")
_QUEUE = re.compile(rf"^\[ *{_NUM}s *\] +queue length: *(\d+),? +concurrency: *(\d+)")
_HISTOGRAM_HEADER = "Latency histogram (values are in milliseconds)"
_HISTOGRAM_LINE = re.compile(rf"^\s*{_NUM}\s+\|[*\s]*?(\d+)\s*$")
# One line per sysbench thread that ignored errors (measure/gates/count_errors.lua).
_IGNORED = re.compile(r"^oltplab: ignored errors: ((?:[0-9A-Za-z]+=\d+ ?)+)$")


class OutputParser:
    """sysbench's output read a block of lines at a time, so a file of any size is read in
    constant memory: `feed` gives the per-interval samples of each block as they come,
    `finish` the rest.
    """

    def __init__(self) -> None:
        self._version: str | None = None
        self._threads: int | None = None
        self._interval_said: float | None = None
        self._found: dict[str, tuple[str | None, ...]] = {}
        self._fatal: list[str] = []
        self._section = ""
        self._text = False
        self._histogram: dict[float, int] = {}
        self._ignored: dict[str, int] = {}
        self._rate = 0
        self._queue: list[tuple[float, float, float]] = []
        self._tps: list[np.ndarray] = []
        self._seconds: list[np.ndarray] = []

    def feed(self, lines: list[str]) -> np.ndarray:
        """The samples of these lines (each with or without its newline), one row each."""
        if not self._text and any(line.strip() for line in lines):
            self._text = True
        measured = []
        for line in lines:
            if not line.startswith("["):
                self._read_line(line.rstrip("\n"))
            elif m := _QUEUE.match(line):
                self._queue.append((float(m[1]), float(m[2]), float(m[3])))
            else:
                measured.append(line)
        samples = _block_samples(measured)
        if len(samples):
            self._seconds.append(samples[:, 0].copy())
            self._tps.append(samples[:, 2].copy())
        return samples

    def _read_line(self, line: str) -> None:
        if line.startswith(("FATAL", "ALERT")):
            self._fatal.append(line.strip())
            return
        if self._version is None and (m := _VERSION.match(line)):
            self._version = m.group(1)
            return
        if self._threads is None and (m := _THREADS.match(line)):
            self._threads = int(m.group(1))
            return
        if self._interval_said is None and (m := _INTERVAL_SAID.match(line)):
            self._interval_said = float(m.group(1))
            return
        if m := _RATE_SAID.match(line):
            self._rate = int(m.group(1))
            return
        if m := _IGNORED.match(line):
            for code, count in (part.split("=") for part in m.group(1).split()):
                self._ignored[code] = self._ignored.get(code, 0) + int(count)
            return
        stripped = line.strip()
        if stripped == _HISTOGRAM_HEADER:
            self._section = stripped
            return
        if self._section == _HISTOGRAM_HEADER:
            if m := _HISTOGRAM_LINE.match(line):
                value = float(m.group(1))
                self._histogram[value] = self._histogram.get(value, 0) + int(m.group(2))
                return
            if not stripped:
                self._section = ""
            return
        if stripped.endswith(":") and not stripped.startswith(("read", "write", "other")):
            self._section = stripped
            return
        patterns = _LATENCY_LINES if self._section in _LATENCY_SECTIONS else _SUMMARY_LINES
        for key, pattern in patterns.items():
            if key not in self._found and (m := pattern.match(line)):
                self._found[key] = m.groups()
                return

    def finish(self, samples: np.ndarray = NO_SAMPLES) -> SysbenchOutput:
        if not self._text:
            return SysbenchOutput(None, None, NO_SAMPLES, None, (), empty=True)
        seconds = np.concatenate(self._seconds) if self._seconds else np.empty(0)
        interval = self._interval_said or _spacing(seconds)
        return SysbenchOutput(
            self._version,
            self._threads,
            samples,
            _summary(self._found, interval if len(seconds) else None),
            tuple(self._fatal),
            tps=np.concatenate(self._tps) if self._tps else np.empty(0),
            seconds=seconds,
            interval=interval if len(seconds) else None,
            histogram=tuple(self._histogram.items()),
            rate=self._rate,
            queue=np.array(self._queue, dtype=np.float64).reshape(len(self._queue), 3),
            ignored_errors=tuple(sorted(self._ignored.items(), key=lambda kv: (-kv[1], kv[0]))),
        )


def _spacing(seconds: np.ndarray) -> float | None:
    """The interval between lines, from their timestamps (the median step)."""
    if len(seconds) >= 2:
        return float(np.median(np.diff(seconds)))
    if len(seconds) == 1:
        return float(seconds[0])
    return None


def _milliseconds(groups: tuple[str | None, ...], index: int = 0) -> float:
    return float(groups[index] or 0) * _UNIT_MS[groups[index + 1]]


def _summary(found: dict[str, tuple[str | None, ...]], interval: float | None) -> Summary | None:
    if not {"transactions", "total_time", "min", "avg", "max", "pct"} <= found.keys():
        return None

    def number(key: str, index: int = 0) -> float:
        return float(found[key][index] or 0) if key in found else 0.0

    seconds = number("total_time")
    # 0.4 and 0.5 print no `queries:` line: their total is the same count.
    queries = int(number("queries")) if "queries" in found else int(number("total"))
    qps = number("queries", 1) if "queries" in found else (queries / seconds if seconds else 0.0)
    return Summary(
        reads=int(number("read")),
        writes=int(number("write")),
        other=int(number("other")),
        queries=queries,
        transactions=int(number("transactions")),
        tps=number("transactions", 1),
        qps=qps,
        errors=int(number("errors")),
        errors_per_s=number("errors", 1),
        reconnects=int(number("reconnects")),
        reconnects_per_s=number("reconnects", 1),
        total_time_s=seconds,
        events=int(number("events")),
        lat_min_ms=_milliseconds(found["min"]),
        lat_avg_ms=_milliseconds(found["avg"]),
        lat_max_ms=_milliseconds(found["max"]),
        lat_pct_ms=_milliseconds(found["pct"], 1),
        percentile=int(number("pct")),
        interval_s=interval,
    )


def parse_output(text: str) -> SysbenchOutput:
    """Every per-interval line and the final summary; a missing part is None, never an error."""
    parser = OutputParser()
    return parser.finish(parser.feed(text.splitlines()))


def read_blocks(lines: Iterable[str], size: int = 4096) -> Iterator[list[str]]:
    """Lines in lists of `size`: what OutputParser.feed takes, a block at a time."""
    while block := list(islice(lines, size)):
        yield block
