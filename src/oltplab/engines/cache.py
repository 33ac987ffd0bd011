"""Where oltplab keeps what it fetched and built for itself: engine binaries, tools, the
sockets of local instances, and this host's calibrations (OLTPLAB_CACHE to move it)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    return Path(os.environ.get("OLTPLAB_CACHE", Path.home() / ".cache" / "oltplab"))


def engines_root() -> Path:
    """Each engine's binaries, in a folder of its own (keyed by its source)."""
    return cache_root() / "engines"


def cache_entry(path: Path) -> Path | None:
    """The engine's folder in the cache that holds `path` (what to remove for the engine to
    be fetched again); None for binaries used where they are (a basedir, a Debian package)."""
    root = engines_root()
    if not path.is_relative_to(root) or path == root:
        return None
    return root / path.relative_to(root).parts[0]
