"""Runs `python -m oltplab ARGS` for tests/support/cli.py: a fresh interpreter that has imported the
libraries oltplab uses and oltplab's own modules below its command line (nothing of pytest),
then forks a child for each request. The child is what a new interpreter started as
`python -m oltplab` would be (its own pid, working directory, environment and the folders its
PYTHONPATH adds, /dev/null as stdin, files as stdout and stderr), minus the ~1 s of imports
the suite would otherwise pay at every call (about a thousand calls in the fast stage).

oltplab's modules are imported here because none reads its environment, working directory
or terminal when imported (they register built-in families, kinds, devices and schedulers,
the same in every call); its command line (`oltplab.cli`) makes its consoles when imported,
from the terminal and environment the call has, so each child imports that itself (the
server checks it never has). The modules are listed by a fresh interpreter that imports
`oltplab.cli` first, as `python -m oltplab` does: an import that fails in that order stops
the server with its traceback, rather than passing here in another order.

Requests are JSON lines on stdin: {"args", "cwd", "env", "stdout", "stderr"}. For each,
this prints `pid N` once the child exists and `exit CODE` once it ended (CODE as
subprocess gives it: negative for a signal). EOF on stdin ends the server."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import runpy
import subprocess
import sys
import traceback
from pathlib import Path

# Libraries (none of them reads anything at import that a call could set differently; the
# consoles are made in each child, after its environment is): those the listing below finds
# loaded, and these that commands load later.
LATER = (
    "numpy", "pydantic", "pydantic_core", "typer", "typer.core", "click", "rich.console",
    "rich.table", "rich.text", "rich.progress", "rich.markdown", "tomli_w", "yaml",
    "pymysql", "psycopg", "jinja2", "packaging.version", "packaging.specifiers",
    "scipy.special", "scipy.stats", "matplotlib", "matplotlib.figure", "matplotlib.lines",
    "matplotlib.axes", "matplotlib.backends.backend_agg",
)  # fmt: skip


def _exit_code(code: object) -> int:
    """What the interpreter makes of SystemExit's argument."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _child(request: dict, encoding: str) -> None:
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            target = os.open(path, os.O_WRONLY | os.O_TRUNC)
            os.dup2(target, fd)
            os.close(target)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding=encoding)
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=encoding)
        sys.stderr = io.TextIOWrapper(
            io.FileIO(2, "w", closefd=False),
            encoding=encoding,
            errors="backslashreplace",
            line_buffering=True,
        )
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
        os.chdir(request["cwd"])
        # `python -m` puts the working directory first on the path (this server's is tests/),
        # where a plugin named in OLTPLAB_PLUGINS may be found.
        sys.path[0] = request["cwd"]
        os.environ.clear()
        os.environ.update(request["env"])
        # Folders this call's PYTHONPATH adds, first, as a new interpreter would have them:
        # a plugin the call names (OLTPLAB_PLUGINS) is imported from there.
        added = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:0] = [folder for folder in added if folder not in sys.path]
        sys.argv = ["-m", *request["args"]]
        try:
            runpy.run_module("oltplab", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as ended:
            code = _exit_code(ended.code)
        except BaseException:
            traceback.print_exc()
            code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


# Run in a fresh interpreter: `import oltplab.cli` as `python -m oltplab` does, then every other
# module of oltplab that a command imports when it needs it (the command line's package
# left out); prints every module then loaded, in the order they were.
_LISTING = """
import importlib, json, pkgutil, sys
import oltplab.cli

def walk(path, prefix):
    for found in pkgutil.iter_modules(path, prefix):
        if found.name in ("oltplab.cli", "oltplab.__main__"):
            continue
        try:
            module = importlib.import_module(found.name)
        except Exception:
            continue  # its command imports it, and fails, as it would without this server
        if found.ispkg:
            walk(module.__path__, found.name + ".")

walk(importlib.import_module("oltplab").__path__, "oltplab.")
print(json.dumps(list(sys.modules)))
"""


def _command_line(name: str) -> bool:
    return name == "oltplab.__main__" or name == "oltplab.cli" or name.startswith("oltplab.cli.")


def _modules() -> list[str]:
    """Libraries first, then oltplab's modules but its command line's."""
    listed = subprocess.run(
        [sys.executable, "-c", _LISTING], capture_output=True, text=True, check=False
    )
    if listed.returncode != 0:
        sys.exit(f"{Path(__file__).name}: importing oltplab failed\n{listed.stderr}")
    loaded = [name for name in json.loads(listed.stdout) if name != "__main__"]
    libraries = [name for name in loaded if name.split(".")[0] != "oltplab"]
    own = [name for name in loaded if name.split(".")[0] == "oltplab" and not _command_line(name)]
    return libraries + list(LATER) + own


def main() -> None:
    for name in _modules():
        # Whatever fails here is imported by the child if it needs it, as any interpreter would.
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    made_consoles = [name for name in sys.modules if _command_line(name)]
    assert not made_consoles, f"oltplab's command line imported by the server: {made_consoles}"
    encoding = sys.stdout.encoding
    replies = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request, encoding)
        print(f"pid {pid}", file=replies, flush=True)
        _, status = os.waitpid(pid, 0)
        print(f"exit {os.waitstatus_to_exitcode(status)}", file=replies, flush=True)


if __name__ == "__main__":
    main()
