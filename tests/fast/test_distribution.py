"""An engine's manifest read from a cache that moved: a copy in a container image, or under
another OLTPLAB_CACHE, finds its binaries where the copy put them. A server binary changed
after its fetch is never run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oltplab.base.errors import EngineError
from oltplab.engines.distribution import Distribution, current_sha256
from oltplab.engines.hosts import free_port
from oltplab.engines.provision import local_instance
from oltplab.store.files import sha256_file


def test_a_cache_copied_elsewhere_keeps_its_engines(tmp_path: Path) -> None:
    before = tmp_path / "home" / ".cache" / "oltplab" / "engines" / "maven-0123456789abcdef"
    recorded = Distribution(
        "mariadb-10.11.5", "mariadb", "10.11.5", before / "dist" / "linux",
        before / "dist" / "linux" / "bin" / "mariadbd", before / "dist" / "linux" / "scripts" / "x",
        None, "00", {"maven": "g:a:1"},
    )  # fmt: skip
    after = tmp_path / "opt" / "oltplab" / "cache" / "engines" / before.name
    moved = Distribution.from_json(recorded.to_json()).moved_to(after)
    assert moved.basedir == after / "dist" / "linux"
    assert moved.server == after / "dist" / "linux" / "bin" / "mariadbd"
    assert moved.install_db == after / "dist" / "linux" / "scripts" / "x"
    assert moved.messages_dir is None
    # An engine used where it is installed (a Debian package's home) stays where it is.
    installed = Distribution(
        "mariadb-10.11.6", "mariadb", "10.11.6", Path("/usr"), Path("/usr/sbin/mariadbd"), None,
        None, "00", {"debian": "mariadb-server"},
    )  # fmt: skip
    assert installed.moved_to(after) == installed


def _fetched(cache: Path) -> Distribution:
    """An engine as a fetch leaves it in the cache, read back from its manifest: its server
    binary (here a script that leaves a mark when it runs) with the sha256 recorded."""
    entry = cache / "engines" / "maven-0123456789abcdef"
    server = entry / "dist" / "bin" / "mariadbd"
    server.parent.mkdir(parents=True)
    server.write_text(f'#!/bin/sh\ntouch "{cache}/ran"\n')
    server.chmod(0o755)
    recorded = Distribution(
        "mariadb-10.11.5", "mariadb", "10.11.5", entry / "dist", server, None, None,
        sha256_file(server), {"maven": "g:a:1"},
    )  # fmt: skip
    return Distribution.from_json(recorded.to_json()).moved_to(entry)


def test_a_server_binary_changed_after_its_fetch_is_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 58: a binary altered in the cache after its fetch was run and measured, and
    run.json still gave the fetched one's sha256. Each start (and the datadir's
    initialisation, which runs it too) checks it against the manifest first."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("OLTPLAB_CACHE", str(cache))
    distribution = _fetched(cache)
    recorded = distribution.binary_sha256
    with distribution.server.open("ab") as binary:
        binary.write(b"\n")
    found = sha256_file(distribution.server)
    instance = local_instance(distribution, tmp_path / "work")
    for step in (lambda: instance.initialise(60), lambda: instance.start(free_port(), 60)):
        with pytest.raises(EngineError) as caught:
            step()
        said = str(caught.value)
        assert said == (
            f"engine mariadb-10.11.5: its server binary {distribution.server} has sha256 "
            f"{found}, not {recorded} as the cache's manifest recorded at its fetch; it was "
            f"changed since, so it is not run: remove {cache / 'engines' / 'maven-0123456789abcdef'}"
            " so that the engine is fetched again"
        )
    assert instance.process is None and not (cache / "ran").exists()


def test_a_change_that_keeps_size_and_mtime_is_still_seen(tmp_path: Path) -> None:
    """What a start compares: the file's sha256 now, not the one hashed at an earlier start,
    when the file was written since (its ctime says so, whatever its size and mtime)."""
    binary = tmp_path / "mysqld"
    binary.write_bytes(b"\x7fELF one")
    before = current_sha256(binary)
    kept = binary.stat()
    binary.write_bytes(b"\x7fELF two")
    os.utime(binary, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    assert current_sha256(binary) == sha256_file(binary) != before
    binary.unlink()
    assert current_sha256(binary) is None
