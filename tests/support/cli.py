"""Run the real `oltplab` command line in a process of its own.

`oltplab(...)` is `python -m oltplab ARGS` in a child process, as subprocess.run would give
it; the child is forked by tests/support/cli_server.py, an interpreter that imported oltplab's
libraries once, so that the suite's many hundred calls do not each spend most of a
second importing them. `start_oltplab(...)` starts a plain interpreter, for tests that
signal or watch the process itself."""

from __future__ import annotations

import json
import locale
import os
import select
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import typer

from oltplab.cli import app

SERVER = Path(__file__).with_name("cli_server.py")


class _Server:
    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.pending = b""

    def _started(self) -> subprocess.Popen[bytes]:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(
                [sys.executable, str(SERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
            self.pending = b""
        return self.process

    def _reply(self, server: subprocess.Popen[bytes], word: str, timeout: float | None) -> int:
        """The server's next line, read from its pipe unbuffered (so that waiting for it
        can time out)."""
        assert server.stdout is not None
        fd = server.stdout.fileno()
        while b"\n" not in self.pending:
            if timeout is not None and not select.select([fd], [], [], timeout)[0]:
                raise TimeoutError
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError(f"{SERVER.name} ended (exit {server.wait()})")
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        said, _, value = line.decode().partition(" ")
        if said != word:
            raise RuntimeError(f"{SERVER.name} said {line!r}, not {word}")
        return int(value)

    def run(self, args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple:
        server = self._started()
        assert server.stdin is not None
        with tempfile.TemporaryDirectory(prefix="oltplab-cli-") as folder:
            out, err = Path(folder, "stdout"), Path(folder, "stderr")
            out.touch()
            err.touch()
            request = {"args": args, "cwd": str(cwd), "env": env, "stdout": str(out),
                       "stderr": str(err)}  # fmt: skip
            server.stdin.write(json.dumps(request).encode() + b"\n")
            server.stdin.flush()
            pid = self._reply(server, "pid", 60)
            try:
                code = self._reply(server, "exit", timeout)
            except TimeoutError:
                os.kill(pid, signal.SIGKILL)
                self._reply(server, "exit", None)
                raise subprocess.TimeoutExpired(
                    [sys.executable, "-m", "oltplab", *args], timeout, out.read_bytes(),
                    err.read_bytes(),
                ) from None  # fmt: skip
            return code, out.read_bytes(), err.read_bytes()


_SERVER = _Server()


def _text(data: bytes) -> str:
    # As subprocess.run(text=True) decodes and translates newlines.
    decoded = data.decode(locale.getpreferredencoding(False))
    return decoded.replace("\r\n", "\n").replace("\r", "\n")


def oltplab(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    code, out, err = _SERVER.run(
        list(args), Path(cwd).absolute(), dict(os.environ if env is None else env), timeout
    )
    return subprocess.CompletedProcess(
        [sys.executable, "-m", "oltplab", *args], code, _text(out), _text(err)
    )


def assert_one_line_error(
    result: subprocess.CompletedProcess[str], *fragments: str, code: int = 2
) -> None:
    """Bad input's contract: the exit code (2 unless said), exactly one line on stderr, no
    traceback, and each fragment in that line."""
    assert result.returncode == code, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def assert_run_refuses(folder: Path, spec: str, *fragments: str) -> None:
    """`oltplab run` of the spec (written as bad.toml in the folder) refuses it as bad input,
    in one line naming the file and each fragment, and creates no results folder."""
    (folder / "bad.toml").write_text(spec)
    result = oltplab("run", "bad.toml", "--results", "out", cwd=folder)
    assert_one_line_error(result, "bad.toml: ", *fragments)
    assert not (folder / "out").exists()


def start_oltplab(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "oltplab", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def parse(words: list[str]) -> None:
    """Parse a command line as `oltplab` would, without running it: a wrong command,
    option or value raises."""
    command: Any = typer.main.get_command(app)
    context = command.make_context("oltplab", words)
    while hasattr(command, "commands"):
        # A group keeps its command's name apart from the arguments after it.
        rest = [*context._protected_args, *context.args]
        name, command, rest = command.resolve_command(context, rest)
        context = command.make_context(name, rest, parent=context)


def options_of_every_command() -> dict[str, list[Any]]:
    """`oltplab COMMAND` (and `engines list`, `submit slurm`...) -> its visible options."""
    found: dict[str, list[Any]] = {}

    def walk(command: Any, name: str) -> None:
        for sub_name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{name} {sub_name}".strip())
        if not hasattr(command, "commands"):
            found[name] = [
                p
                for p in command.params
                if p.param_type_name == "option" and not getattr(p, "hidden", False)
            ]

    walk(typer.main.get_command(app), "")
    return found
