"""One-off snapshots: pt-summary per host, pt-mysql-summary per engine and tier.

They run before any measurement starts, never during one, and their failures are written
into the file they would have filled, never raised.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from oltplab.engines.endpoint import Endpoint
from oltplab.engines.launcher import PrivateInstance

TIMEOUT_SECONDS = 120


def _capture(command: list[str], output: Path) -> bool:
    try:
        result = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        output.write_text(f"{command[0]} did not finish within {TIMEOUT_SECONDS} s\n")
        return False
    output.write_text(result.stdout + (f"\n[stderr]\n{result.stderr}" if result.stderr else ""))
    return result.returncode == 0


def host_summary(results: Path) -> str | None:
    """pt-summary once per results directory; the reason when it could not be taken."""
    output = results / "pt-summary.txt"
    if output.is_file():
        return None
    if shutil.which("pt-summary") is None:
        return "pt-summary not installed"
    return None if _capture(["pt-summary"], output) else f"pt-summary failed (see {output.name})"


def engine_summary(server: PrivateInstance | Endpoint, output: Path) -> str | None:
    """pt-mysql-summary of a running engine; the reason when it could not be taken.

    An endpoint's password goes through an option file only we can read, never the
    command line (which any user can list).
    """
    if shutil.which("pt-mysql-summary") is None:
        return "pt-mysql-summary not installed"
    with tempfile.TemporaryDirectory(prefix="oltplab-") as scratch:
        options = Path(scratch) / "client.cnf"
        fd = os.open(options, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write("[client]\n")
            if isinstance(server, PrivateInstance):
                handle.write(f"user=root\nsocket={server.layout.socket}\n")
            else:
                handle.write(
                    f"user={server.user}\npassword={server.password}\n"
                    f"host={server.host}\nport={server.port}\n"
                )
        ok = _capture(["pt-mysql-summary", f"--defaults-file={options}", "--sleep=1"], output)
    return None if ok else f"pt-mysql-summary failed (see {output.name})"
