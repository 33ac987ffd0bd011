"""Every catalog engine and every kind of source, started for real with a translated config."""

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from oltplab.engines.config import check_variables, expected_variables
from oltplab.engines.families import intent_settings, option_file
from oltplab.engines.hosts import free_port
from oltplab.engines.provision import local_instance
from oltplab.engines.supplier import supply
from oltplab.spec import parse_spec
from oltplab.spec.catalog import CATALOG
from tests.support.doors import (
    capabilities,
    mysql_open_doors,
    mysql_outfile_refusals,
    postgres_open_doors,
)

# Their subject is provisioning each family from nothing.
pytestmark = pytest.mark.fresh_engines


def start_and_check(spec_text: str, work: Path) -> tuple[str, str, str]:
    spec = parse_spec(spec_text, "t.toml")
    distribution = supply(spec.engines[0])
    instance = local_instance(distribution, work)
    instance.prepare_folders()
    port = free_port()
    family, version = distribution.family, distribution.version
    tunables = intent_settings(family, version, spec.resolve(spec.tier_list[0]))
    instance.write_option_file(
        option_file(family, version, "t", "t", instance.paths(port), tunables)
    )
    instance.initialise(timeout=300)
    instance.start(port, timeout=120)
    try:
        with instance.control() as control:
            version = control.version()
            mismatches = check_variables(expected_variables(tunables), control.variables())
        assert_shut(instance, port)
    finally:
        assert instance.stop(timeout=60)
    assert mismatches == []
    return distribution.family, distribution.version, version


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


@pytest.mark.parametrize("name", newest_of_each_release())
def test_catalog_engine_runs_with_every_intended_setting_live(name, tmp_path):
    family, version, live = start_and_check(
        f'engines = [{{name = "{name}"}}]\n[config]\nbinlog = true\nredo_capacity = "96M"\n',
        tmp_path / "w",
    )
    assert family == CATALOG[name].family
    assert live.startswith(version) and version.startswith(CATALOG[name].version)


def test_tarball_source_is_unpacked_identified_and_runs(tmp_path, monkeypatch):
    """The path official tarballs (Percona Server, MySQL) take, with one built here."""
    basedir = supply(parse_spec('engines = [{name = "mysql-5.7.22"}]', "t").engines[0]).basedir
    monkeypatch.setenv("OLTPLAB_CACHE", str(tmp_path / "cache"))  # a throwaway engine
    tarball = tmp_path / "Percona-Server-like-5.7.22-Linux.x86_64.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(basedir, arcname="Percona-Server-like-5.7.22-Linux.x86_64")
    family, version, live = start_and_check(
        f'engines = [{{name = "ps57", source = {{tarball = "{tarball}"}}}}]', tmp_path / "w"
    )
    assert (family, version) == ("mysql", "5.7.22") and live.startswith("5.7.22")

    # The same tarball under another name: a source not yet in the cache.
    again = tmp_path / "ps57-again.tar.gz"
    shutil.copy(tarball, again)
    (tmp_path / "s.toml").write_text(
        f'engines = [{{name = "ps57", source = {{tarball = "{again.name}"}}}}]'
    )
    fetched = subprocess.run(
        [sys.executable, "-m", "oltplab", "engines", "fetch", "ps57", "--spec", "s.toml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert fetched.returncode == 0, fetched.stderr
    assert "mysql 5.7.22" in fetched.stdout and "sha256" in fetched.stdout
    # Not yet in the cache: said before the wait.
    said = " ".join(fetched.stdout.split())
    assert said.startswith("ps57: fetching tarball") and "a minute or so, once;" in said, said


def test_basedir_source_is_used_in_place(tmp_path):
    basedir = supply(parse_spec('engines = [{name = "mariadb-11.4.5"}]', "t").engines[0]).basedir
    family, version, _ = start_and_check(
        f'engines = [{{name = "m", source = {{basedir = "{basedir}"}}}}]', tmp_path / "w"
    )
    assert (family, version) == ("mariadb", "11.4.5")
