"""An engine's binaries on another host: where a private instance there runs them from.

The engine's binaries are copied from the local cache to the host's work directory (and
checked by sha256 there), unless the host has the very same server binary in place. The
instance itself is the same as on this machine, composed with an SSH host (hosts.py).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from oltplab.base.errors import EngineError
from oltplab.engines.cache import cache_root
from oltplab.engines.distribution import Distribution, altered_binary, current_sha256
from oltplab.engines.hosts import SshHost

# Kills a server a lost session left behind, only if its command line names our option file.
_KILL_STALE = (
    'pid=$(cat "$1" 2>/dev/null) || exit 0; '
    'tr "\\0" " " < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$2" || exit 0; '
    'kill -9 "$pid"; while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done'
)


def place_on(distribution: Distribution, host: SshHost) -> Distribution:
    """The distribution where the host can run it: where it is, when the host has the very
    same server binary there (a shared system package), or else copied from the cache to
    the host's work directory (once; checked by the server binary's sha256)."""
    if host.sha256(distribution.server) == distribution.binary_sha256:
        return distribution
    root = distribution.basedir
    cache = cache_root()
    if not root.is_relative_to(cache):
        raise EngineError(
            f"engine {distribution.engine}: only engines fetched into oltplab's cache (maven, "
            "debian or tarball sources), or installed at the same place on the host, can run "
            f"on host {host.name}"
        )
    top = cache / root.relative_to(cache).parts[0] / root.relative_to(cache).parts[1]
    remote_top = host.workdir / "engines" / top.name

    def rebased(path: Path) -> Path:
        # A path on the remote host; both sides are POSIX.
        return Path(remote_top / path.relative_to(top))

    remote = replace(
        distribution,
        basedir=rebased(distribution.basedir),
        server=rebased(distribution.server),
        install_db=distribution.install_db and rebased(distribution.install_db),
        messages_dir=distribution.messages_dir and rebased(distribution.messages_dir),
    )
    if host.sha256(remote.server) != distribution.binary_sha256:
        # What is copied is checked here first: the host would run a cache altered here.
        if problem := altered_binary(distribution, current_sha256(distribution.server), None):
            raise EngineError(problem)
        host.push_tree(top, remote_top)
        if host.sha256(remote.server) != distribution.binary_sha256:
            raise EngineError(
                f"engine {distribution.engine}: the server binary copied to host {host.name} "
                "does not match its sha256"
            )
    return remote
