"""The sysbench driver: what this sysbench accepts, its command lines, and running it."""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath

from oltplab.base import nofollow
from oltplab.base.errors import EngineError, EnvironmentProblem
from oltplab.base.processes import spawn
from oltplab.spec.fields import Scalar

log = logging.getLogger("oltplab")


@dataclass(frozen=True)
class ConnectionTarget:
    host: str
    port: int
    user: str
    password: str
    database: str = "sbtest"
    driver: str = "mysql"  # sysbench's database driver: mysql or pgsql


def connection_options(target: ConnectionTarget) -> str:
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


@dataclass(frozen=True)
class Call:
    """One sysbench run as a workload kind asks for it (its test or script, on which data,
    with what options) and as the runner completes it (time, interval, rate, and the gate
    it runs through, named with its environment)."""

    test: str  # a built-in test's name or a script's path
    action: str
    threads: int
    tables: int | None = None
    table_size: int | None = None
    seconds: int | None = None
    report_interval: int | None = None
    rand_type: str = "uniform"
    rand_pareto_h: float | None = None
    options: dict[str, Scalar] = field(default_factory=dict)
    rate: int = 0
    env: dict[str, str] = field(default_factory=dict)

    def args(self, binary: str, connection: PurePath) -> list[str]:
        """sysbench's arguments; the connection (password and all) comes from the options
        file written by `connection_options`."""
        args = [
            binary,
            self.test,
            f"--config-file={connection}",
            # sbtest's own options: a script with tables of its own has neither.
            *([f"--tables={self.tables}"] if self.tables is not None else []),
            *([f"--table-size={self.table_size}"] if self.table_size is not None else []),
            f"--threads={self.threads}",
            f"--rand-type={self.rand_type}",
        ]
        if self.rand_pareto_h is not None:
            args.append(f"--rand-pareto-h={self.rand_pareto_h}")
        if self.seconds is not None:
            args += [f"--time={self.seconds}", "--events=0"]
        if self.report_interval is not None:
            args.append(f"--report-interval={self.report_interval}")
        if self.action == "run":
            # The whole latency distribution, at sysbench's own buckets; p95 per interval.
            args += ["--percentile=95", "--histogram=on"]
        if self.rate:
            # Open loop: events are offered at this rate whatever the server does; a late
            # event waits in sysbench's queue and its latency counts the wait.
            args.append(f"--rate={self.rate}")
        for key, value in self.options.items():
            rendered = ("on" if value else "off") if isinstance(value, bool) else value
            args.append(f"--{key}={rendered}")
        args.append(self.action)
        return args


# --- running -------------------------------------------------------------------------------


@dataclass
class SysbenchRun:
    returncode: int | None
    timed_out: bool
    seconds: float
    cpu_seconds: float = 0.0  # user + system time of the sysbench process
    # When it was launched (time.time()): the zero of its clock, to put telemetry on.
    launched: float = 0.0


CLIENT_BOUND_SHARE = 0.9


def client_share(cpu_seconds: float, wall_seconds: float, threads: int, cores: int) -> float:
    """The part of the CPU sysbench could get that it used: it can keep at most
    min(threads, cores) cores busy."""
    available = wall_seconds * max(1, min(threads, cores))
    return cpu_seconds / available if available > 0 else 0.0


@dataclass(frozen=True)
class Job:
    """One sysbench process: its arguments, where its output goes, where it connects (for
    the log) and any variables its environment adds."""

    args: list[str]
    output: Path
    target: ConnectionTarget
    env: dict[str, str] | None = None


def execute(
    args: list[str],
    output: Path,
    timeout: float,
    on_tick: Callable[[float], None],
    target: ConnectionTarget,
) -> SysbenchRun:
    """Run sysbench with its output streamed to a file, so a killed run keeps what it printed.
    The log says where it connects (its option file holds that, password and all)."""
    return execute_together([Job(args, output, target)], timeout, on_tick)[0]


def execute_together(
    jobs: list[Job], timeout: float, on_tick: Callable[[float], None]
) -> list[SysbenchRun]:
    """Several sysbench processes at once (a time-sliced round), each streamed to its
    file; those still running after `timeout` are killed. Each one's CPU time is its own
    (from its exit status's resource usage)."""
    started = time.monotonic()
    launched: list[float] = []
    runs: dict[int, SysbenchRun] = {}
    with ExitStack() as stack:
        processes = []
        for job in jobs:
            where = f"{job.target.driver} {job.target.user}@{job.target.host}:"
            where += f"{job.target.port}/{job.target.database}"
            # As a shell would run it: the workload a gate runs is named in its environment.
            said = [f"{name}={value}" for name, value in (job.env or {}).items()]
            log.info("sysbench: %s (%s)", " ".join([*said, *job.args]), where)
            job.output.parent.mkdir(parents=True, exist_ok=True)
            # Prepare's output goes in the work folder, which the server's uid owns.
            sink = stack.enter_context(os.fdopen(nofollow.create(job.output), "wb"))
            env = {**os.environ, **job.env} if job.env else None
            processes.append(spawn(job.args, stdout=sink, env=env))
            launched.append(time.time())
        try:
            while len(runs) < len(processes):
                elapsed = time.monotonic() - started
                for index, process in enumerate(processes):
                    if index not in runs and (done := _reaped(process, elapsed)) is not None:
                        runs[index] = replace(done, launched=launched[index])
                if elapsed > timeout:
                    for index, process in enumerate(processes):
                        if index not in runs:
                            process.kill()
                            process.wait()
                            runs[index] = SysbenchRun(None, True, elapsed, launched=launched[index])
                    break
                on_tick(elapsed)
                time.sleep(0.2)
        except BaseException:
            for index, process in enumerate(processes):
                if index not in runs:
                    process.kill()
                    process.wait()
            raise
    return [runs[index] for index in range(len(processes))]


def _reaped(process: subprocess.Popen[bytes], elapsed: float) -> SysbenchRun | None:
    """The process's end with its own CPU time, if it has ended (reaped here, with its
    resource usage, rather than by Popen, which keeps none)."""
    pid, status, usage = os.wait4(process.pid, os.WNOHANG)
    if pid == 0:
        return None
    process.returncode = os.waitstatus_to_exitcode(status)
    return SysbenchRun(process.returncode, False, elapsed, usage.ru_utime + usage.ru_stime)
