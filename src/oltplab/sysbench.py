"""The sysbench driver: build its command lines, run it, parse what it prints (1.0.x)."""

from __future__ import annotations

import logging
import re
import resource
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain, islice
from pathlib import Path

import numpy as np

from oltplab.engines.processes import spawn
from oltplab.errors import EngineError, EnvironmentProblem
from oltplab.spec.fields import Scalar
from oltplab.stats import stalls

log = logging.getLogger("oltplab")


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    user: str
    password: str
    database: str = "sbtest"
    driver: str = "mysql"  # sysbench's database driver: mysql or pgsql


def connection_options(target: Target) -> str:
    """The connection options as sysbench's --config-file reads them, so that the password
    never stands on a command line (which every local user can list)."""
    driver = target.driver
    options = {
        "db-driver": driver,
        f"{driver}-host": target.host,
        f"{driver}-port": str(target.port),
        f"{driver}-user": target.user,
        f"{driver}-password": target.password,
        f"{driver}-db": target.database,
    }
    for key, value in options.items():
        # sysbench splits its config file's lines at white space.
        if any(char.isspace() or ord(char) < 32 for char in value):
            what = "password" if key.endswith("password") else key
            raise EngineError(
                f"{target.user}@{target.host}:{target.port}: the {what} holds white space, "
                "which sysbench's option file cannot carry; choose one without"
            )
    return "".join(f"{key}={value}\n" for key, value in options.items())


def find_sysbench() -> str:
    path = shutil.which("sysbench")
    if path is None:
        raise EnvironmentProblem(
            "sysbench not found on PATH: install it with `apt-get install sysbench` "
            "(or run scripts/setup.sh)"
        )
    return path


def sysbench_version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip().removeprefix("sysbench ").split(" ")[0] or "unknown"


# --- what this sysbench accepts -------------------------------------------------------------

_HELP_OPTION = re.compile(r"^\s+--([a-z][a-z0-9_-]*)(\[=on\|off\]|=\[?([A-Z]+))?")
_RAND_TYPES = re.compile(r"--rand-type=\S+\s.*\{([a-z,]+)\}")


def option_key(name: str) -> str:
    """sysbench takes --read-percent for a script's read_percent: one spelling to compare."""
    return name.replace("_", "-")


def help_options(text: str) -> dict[str, str]:
    """The options a help text lists, with the kind of value each takes: N, SIZE, STRING,
    LIST, FILENAME, or bool for on|off."""
    found = {}
    for line in text.splitlines():
        if m := _HELP_OPTION.match(line):
            found[option_key(m.group(1))] = "bool" if m.group(2) == "[=on|off]" else m.group(3)
    return found


def help_rand_types(text: str) -> tuple[str, ...]:
    m = _RAND_TYPES.search(text)
    return tuple(m.group(1).split(",")) if m else ()


def value_problem(value: Scalar, kind: str | None) -> str | None:
    """Why a value does not suit an option of this kind, or None."""
    if kind == "bool":
        if isinstance(value, bool) or str(value).lower() in ("on", "off"):
            return None
        return "expects true or false"
    if kind == "N" and (isinstance(value, bool) or not isinstance(value, int | float)):
        try:
            float(str(value))
        except ValueError:
            return "expects a number"
    return None


def command(
    binary: str,
    test: str,
    action: str,
    connection: Path,
    *,
    tables: int,
    table_size: int,
    threads: int,
    seconds: int | None = None,
    report_interval: int | None = None,
    rand_type: str = "uniform",
    rand_pareto_h: float | None = None,
    options: dict[str, Scalar] | None = None,
) -> list[str]:
    """sysbench's arguments; the connection (password and all) comes from the options file
    written by `connection_options`."""
    args = [
        binary,
        test,
        f"--config-file={connection}",
        f"--tables={tables}",
        f"--table-size={table_size}",
        f"--threads={threads}",
        f"--rand-type={rand_type}",
    ]
    if rand_pareto_h is not None:
        args.append(f"--rand-pareto-h={rand_pareto_h}")
    if seconds is not None:
        args += [f"--time={seconds}", "--events=0"]
    if report_interval is not None:
        args.append(f"--report-interval={report_interval}")
    if action == "run":
        args += ["--percentile=95", "--histogram=off"]
    for key, value in (options or {}).items():
        rendered = ("on" if value else "off") if isinstance(value, bool) else value
        args.append(f"--{key}={rendered}")
    args.append(action)
    return args


# --- running -------------------------------------------------------------------------------


@dataclass
class SysbenchRun:
    returncode: int | None
    timed_out: bool
    seconds: float
    cpu_seconds: float = 0.0  # user + system time of the sysbench process


CLIENT_BOUND_SHARE = 0.9


def client_share(cpu_seconds: float, wall_seconds: float, threads: int, cores: int) -> float:
    """The part of the CPU sysbench could get that it used: it can keep at most
    min(threads, cores) cores busy."""
    available = wall_seconds * max(1, min(threads, cores))
    return cpu_seconds / available if available > 0 else 0.0


def execute(
    args: list[str],
    output: Path,
    timeout: float,
    on_tick: Callable[[float], None],
    target: Target,
) -> SysbenchRun:
    """Run sysbench with its output streamed to a file, so a killed run keeps what it printed.
    The log says where it connects (its option file holds that, password and all)."""
    where = f"{target.driver} {target.user}@{target.host}:{target.port}/{target.database}"
    log.info("sysbench: %s (%s)", " ".join(args), where)
    output.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    # sysbench is the only child that ends during a run, so the children's rusage delta is it.
    cpu_before = _children_cpu()
    with output.open("wb") as sink:
        process = spawn(args, stdout=sink)
        try:
            while process.poll() is None:
                elapsed = time.monotonic() - started
                if elapsed > timeout:
                    process.kill()
                    process.wait()
                    return SysbenchRun(None, True, elapsed)
                on_tick(elapsed)
                time.sleep(0.2)
        except BaseException:
            process.kill()
            process.wait()
            raise
    return SysbenchRun(
        process.returncode, False, time.monotonic() - started, _children_cpu() - cpu_before
    )


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# --- parsing ---------------------------------------------------------------------------------


# What one per-second line says, in the order it says it.
SAMPLE_COLUMNS = (
    "second", "threads", "tps", "qps", "reads_per_s", "writes_per_s", "other_per_s",
    "lat_pct_ms", "errors_per_s", "reconnects_per_s",
)  # fmt: skip


@dataclass(frozen=True)
class Interval:
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

    @property
    def reads_per_s(self) -> float:
        return self.reads / self.total_time_s if self.total_time_s else 0.0

    @property
    def writes_per_s(self) -> float:
        return self.writes / self.total_time_s if self.total_time_s else 0.0

    @property
    def other_per_s(self) -> float:
        return self.other / self.total_time_s if self.total_time_s else 0.0


@dataclass(frozen=True)
class SysbenchOutput:
    version: str | None
    threads: int | None
    # One row per per-second line, columns in SAMPLE_COLUMNS order; no rows when they were
    # streamed elsewhere (an import).
    samples: np.ndarray
    summary: Summary | None
    fatal: tuple[str, ...] = field(default=())
    empty: bool = False
    # The per-second TPS and the seconds printed, kept even when the samples are streamed:
    # the stall and gap checks need them (16 bytes a second).
    tps: np.ndarray = field(default_factory=lambda: np.empty(0))
    seconds: np.ndarray = field(default_factory=lambda: np.empty(0))

    @cached_property
    def stalls(self) -> list[tuple[int, int]]:
        """Runs of seconds far below the median (stats.stalls), found once per output."""
        return stalls(self.tps)

    @property
    def intervals(self) -> tuple[Interval, ...]:
        return tuple(Interval(r[0], int(r[1]), *r[2:]) for r in self.samples.tolist())


_NUM = r"([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
# One per-second line; its groups are the SAMPLE_COLUMNS in order.


def _interval_line(number: str) -> re.Pattern[str]:
    """A per-second line; its groups are the SAMPLE_COLUMNS in order. Spaces, not any white
    space: sysbench pads with spaces only, and the narrower pattern runs several times
    faster over a long output."""
    return re.compile(
        rf"^\[ *{number}s *\] +thds: *(\d+) +tps: *{number} +qps: *{number} +"
        rf"\(r/w/o: *{number}/{number}/{number}\) +lat +\(ms,\d+%\): *{number} +"
        rf"err/s:? *{number} +reconn/s:? *{number}",
        re.MULTILINE,
    )


_INTERVAL = _interval_line(_NUM)
# Plain decimals, as sysbench prints them: tried first, since it matches twice as fast; a
# block where it misses a line or takes something that is no number is read again with
# the full pattern above.
_PLAIN_INTERVAL = _interval_line(r"([\d.]+)")
_FIELDS = {
    "read": re.compile(rf"^\s*read:\s*{_NUM}"),
    "write": re.compile(rf"^\s*write:\s*{_NUM}"),
    "other": re.compile(rf"^\s*other:\s*{_NUM}"),
    "transactions": re.compile(rf"^\s*transactions:\s*{_NUM}\s+\({_NUM} per sec\.\)"),
    "queries": re.compile(rf"^\s*queries:\s*{_NUM}\s+\({_NUM} per sec\.\)"),
    "errors": re.compile(rf"^\s*ignored errors:\s*{_NUM}\s+\({_NUM} per sec\.\)"),
    "reconnects": re.compile(rf"^\s*reconnects:\s*{_NUM}\s+\({_NUM} per sec\.\)"),
    "total_time": re.compile(rf"^\s*total time:\s*{_NUM}s"),
    "events": re.compile(rf"^\s*total number of events:\s*{_NUM}"),
    "min": re.compile(rf"^\s*min:\s*{_NUM}"),
    "avg": re.compile(rf"^\s*avg:\s*{_NUM}"),
    "max": re.compile(rf"^\s*max:\s*{_NUM}"),
    "pct": re.compile(rf"^\s*(\d+)th percentile:\s*{_NUM}"),
}
_VERSION = re.compile(r"^sysbench\s+(\S+)")
_THREADS = re.compile(r"^Number of threads:\s*(\d+)")
NO_SAMPLES = np.empty((0, len(SAMPLE_COLUMNS)))


def _samples(found: list[tuple[str, ...]]) -> np.ndarray:
    # Python's float() reads these strings faster than NumPy's own conversion does.
    count = len(found) * len(SAMPLE_COLUMNS)
    flat = np.fromiter(map(float, chain.from_iterable(found)), np.float64, count)
    return flat.reshape(len(found), len(SAMPLE_COLUMNS))


def _plain_samples(text: str, bracketed: int) -> np.ndarray | None:
    """The samples when every bracketed line is a per-second line in plain decimals."""
    found = _PLAIN_INTERVAL.findall(text)
    if len(found) != bracketed:
        return None
    try:
        return _samples(found)
    except ValueError:
        return None


class OutputParser:
    """sysbench's output read a block of lines at a time, so a file of any size is read in
    constant memory: `feed` gives the per-second samples of each block as they come,
    `finish` the rest.

    The per-second lines are nearly all of a long output; they are matched over the whole
    block at once and converted by NumPy, the few other lines one by one.
    """

    def __init__(self) -> None:
        self._version: str | None = None
        self._threads: int | None = None
        self._found: dict[str, tuple[str, ...]] = {}
        self._fatal: list[str] = []
        self._section = ""
        self._text = False
        self._tps: list[np.ndarray] = []
        self._seconds: list[np.ndarray] = []

    def feed(self, lines: list[str]) -> np.ndarray:
        """The samples of these lines (each with or without its newline), one row each."""
        if not self._text and any(line.strip() for line in lines):
            self._text = True
        for line in lines:
            if not line.startswith("["):
                self._read_line(line)
        text = "\n".join(line.rstrip("\n") for line in lines)
        samples = _plain_samples(text, sum(line.startswith("[") for line in lines))
        if samples is None:
            samples = _samples(_INTERVAL.findall(text))
        if not len(samples):
            return NO_SAMPLES
        self._seconds.append(samples[:, 0].copy())
        self._tps.append(samples[:, 2].copy())
        return samples

    def _read_line(self, line: str) -> None:
        if line.startswith(("FATAL", "ALERT")):
            self._fatal.append(line.strip())
        if (m := _VERSION.match(line)) and self._version is None:
            self._version = m.group(1)
            return
        if (m := _THREADS.match(line)) and self._threads is None:
            self._threads = int(m.group(1))
            return
        stripped = line.strip()
        if stripped.endswith(":") and not stripped.startswith(("read", "write", "other")):
            self._section = stripped
        for key, pattern in _FIELDS.items():
            if key in self._found:
                continue
            if key in {"min", "avg", "max", "pct"} and self._section != "Latency (ms):":
                continue
            if m := pattern.match(line):
                self._found[key] = m.groups()
                break

    def finish(self, samples: np.ndarray = NO_SAMPLES) -> SysbenchOutput:
        if not self._text:
            return SysbenchOutput(None, None, NO_SAMPLES, None, (), empty=True)
        return SysbenchOutput(
            self._version,
            self._threads,
            samples,
            _summary(self._found),
            tuple(self._fatal),
            tps=np.concatenate(self._tps) if self._tps else np.empty(0),
            seconds=np.concatenate(self._seconds) if self._seconds else np.empty(0),
        )


def parse_output(text: str) -> SysbenchOutput:
    """Every per-second line and the final summary; a missing part is None, never an error."""
    parser = OutputParser()
    return parser.finish(parser.feed(text.splitlines()))


def read_blocks(lines: Iterable[str], size: int = 4096) -> Iterator[list[str]]:
    """Lines in lists of `size`: what OutputParser.feed takes, a block at a time."""
    while block := list(islice(lines, size)):
        yield block


def _summary(found: dict[str, tuple[str, ...]]) -> Summary | None:
    required = {"transactions", "queries", "total_time", "min", "avg", "max", "pct"}
    if not required <= found.keys():
        return None

    def number(key: str, index: int = 0) -> float:
        return float(found[key][index]) if key in found else 0.0

    return Summary(
        reads=int(number("read")),
        writes=int(number("write")),
        other=int(number("other")),
        queries=int(number("queries")),
        transactions=int(number("transactions")),
        tps=number("transactions", 1),
        qps=number("queries", 1),
        errors=int(number("errors")),
        errors_per_s=number("errors", 1),
        reconnects=int(number("reconnects")),
        reconnects_per_s=number("reconnects", 1),
        total_time_s=number("total_time"),
        events=int(number("events")),
        lat_min_ms=number("min"),
        lat_avg_ms=number("avg"),
        lat_max_ms=number("max"),
        lat_pct_ms=number("pct", 1),
        percentile=int(number("pct")),
    )


# Flags told next to a cell that do not make its numbers suspect.
TELEMETRY_GAP = "telemetry-gap"
INFORMATIONAL_FLAGS = frozenset({TELEMETRY_GAP})


def validity_flags(output: SysbenchOutput, seconds: float | None, interval: int) -> list[str]:
    """Marks that make a measured cell suspect; each one is listed next to its numbers.

    `seconds` is how long the run was asked to last; for imported files it is unknown and
    the summary's total time stands in for it.
    """
    if output.empty:
        return ["empty"]
    flags = []
    summary = output.summary
    if summary is None:
        flags.append("truncated")
    else:
        if summary.errors > 0:
            flags.append("errors")
        if summary.reconnects > 0:
            flags.append("reconnects")
        if seconds is not None and summary.total_time_s < seconds * 0.95:
            flags.append("short")
    if seconds is None and summary is not None:
        seconds = summary.total_time_s
    if output.stalls:
        flags.append("stall")
    seen = output.seconds
    gaps = bool(np.any(np.diff(np.round(seen)) > interval))
    expected = int(seconds // interval) if seconds is not None else None
    if gaps or (expected is not None and len(seen) < expected - 1):
        flags.append("missing-intervals")
    elif expected is not None and len(seen) > expected + 1:
        flags.append("extra-intervals")
    return flags


def stall_notes(output: SysbenchOutput) -> str:
    """Where the stalls were, as seconds of the run: "stall 12-16 s"."""
    return ", ".join(f"stall {first}-{last} s" for first, last in output.stalls)


def read_output(path: Path) -> SysbenchOutput:
    parser = OutputParser()
    with path.open(encoding="utf-8", errors="replace") as lines:
        blocks = [parser.feed(block) for block in read_blocks(lines)]
    return parser.finish(np.concatenate(blocks) if blocks else NO_SAMPLES)
