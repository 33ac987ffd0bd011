"""An engine's manifest read from a cache that moved: a copy in a container image, or under
another OLTPLAB_CACHE, finds its binaries where the copy put them."""

from __future__ import annotations

from pathlib import Path

from oltplab.engines.distribution import Distribution


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
