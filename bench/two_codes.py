"""Benches that measure oltplab's own change run the code of an earlier commit beside this
checkout's: the earlier one from a detached worktree, each started with its `src` first on
PYTHONPATH."""

from __future__ import annotations

import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def codes(before: str, root: Path) -> dict[str, Path]:
    """The `src` folders of the code before (commit `before`, checked out under root) and
    after (this checkout)."""
    tree = root / "before-code"
    if not tree.exists():
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(tree), before],
            cwd=HERE, check=True, capture_output=True,
        )  # fmt: skip
    return {"before": tree / "src", "after": HERE / "src"}
