"""What every engine family does, checked the same way for each registered family (the
built-in ones and the toy of tests/support/toys/): it is known by its name to specs, import and
the registry; a server names it (its own example); it says where a basedir holds its
files; it translates every tier of an intent into an option file that holds each setting;
and it gives the commands and files of a private instance. Starting real servers of each
family is tests/engine/test_engines.py (the toy's: test_toy_family.py).
"""

from __future__ import annotations

import signal
from pathlib import Path, PurePosixPath

from oltplab.base.wire import MYSQL, POSTGRESQL
from oltplab.engines.config import ServerPaths, Setting, expected_variables, parse_version
from oltplab.engines.distribution import Distribution
from oltplab.engines.families import (
    family_named,
    family_of,
    family_of_binary,
    family_said,
    intent_settings,
    option_file,
)
from oltplab.engines.family import ControlRoute, Family, Layout
from oltplab.engines.hosts import Host
from oltplab.importers.naming import engine_folder
from oltplab.spec import parse_spec

# sysbench's drivers: a family speaks one of them, or sysbench cannot measure it.
PROTOCOLS = (MYSQL, POSTGRESQL)


def _spec(family: str):
    """Every key of the intent, in two tiers that differ in each of them, and an extra."""
    return parse_spec(
        f"""
engines = [{{name = "mariadb-10.11.5"}}]
[config]
buffer_pool = "256M"
redo_capacity = "512M"
[config.extra.{family}]
contract_extra = 7
[[tiers]]
name = "durable"
flush_log_at_trx_commit = 1
binlog = true
doublewrite = true
[[tiers]]
name = "fast"
buffer_pool = "1G"
flush_log_at_trx_commit = 2
binlog = false
doublewrite = false
""",
        "contract.toml",
    )


def _distribution(family: type[Family], version: str, root: Path) -> Distribution:
    (root / "bin").mkdir(parents=True, exist_ok=True)
    return Distribution(
        engine=f"{family.name}-contract",
        family=family.name,
        version=version,
        basedir=root,
        server=root / "bin" / "server",
        install_db=root / "bin" / "initialise",
        messages_dir=None,
        binary_sha256="0" * 64,
        source={"basedir": str(root)},
    )


def check_family(family: type[Family], work: Path) -> None:
    # Known by its name, to the registry and to specs (as the key of its extras).
    assert family_named(family.name) is family
    assert family.client_protocol in PROTOCOLS, family.client_protocol
    spec = _spec(family.name)
    sample = family.example

    # Where a basedir holds its files: relative paths, a server binary among them.
    files = (*family.server_binaries, *family.install_scripts, *family.messages_folders)
    assert family.server_binaries and not any(PurePosixPath(f).is_absolute() for f in files)

    # A server names it, and its release.
    found = family_of_binary(sample.banner)
    assert found is not None and found[0] is family, (sample.banner, found)
    assert found[1] == sample.version
    assert family_said(sample.said, family.client_protocol) is family, sample.said

    # Result trees name it by each of its words.
    assert family.name in family.aliases
    for alias in family.aliases:
        folder = engine_folder(alias, f"{sample.version}-{alias}")
        assert (folder.family, folder.variant) == (family.name, ""), (alias, folder)

    # Every tier of the intent in its own options, each one written to the option file,
    # each one checkable live, and the extras last (so they win).
    paths = ServerPaths(
        basedir=work / "base",
        datadir=work / "datadir",
        socket=work / "server.sock",
        port=4321,
        pid_file=work / "server.pid",
        error_log=work / "server.err",
        tmpdir=work / "tmp",
        secure_files=work / "files",
        lc_messages_dir=None,
    )
    by_tier: dict[str, list[Setting]] = {}
    for tier in spec.tier_list:
        tunables = intent_settings(family.name, sample.version, spec.resolve(tier))
        assert tunables and all(isinstance(s, Setting) for s in tunables)
        assert expected_variables(tunables), "no setting can be checked on the live server"
        text = option_file(family.name, sample.version, "contract", tier.name, paths, tunables)
        assert "4321" in text, "the option file does not give the port"
        positions = [text.find(s.option) for s in tunables]
        assert all(p >= 0 for p in positions), [s.option for s in tunables if s.option not in text]
        assert tunables[-1].option == "contract_extra" and text.rstrip().endswith("7")
        by_tier[tier.name] = tunables
    durable, fast = (expected_variables(by_tier[name]) for name in ("durable", "fast"))
    assert durable != fast, "two tiers that differ in every key gave the same settings"
    server = family.server_settings(parse_version(sample.version), paths)
    assert all(s.expected is None for s in server), "paths are not tunables to check"

    # A private instance: its commands run the distribution's binaries, its secrets live
    # in its work folder, and it is stopped by a signal.
    distribution = _distribution(family, sample.version, work / "dist")
    instance = family_of(distribution)
    assert isinstance(instance, family)
    layout = Layout(work / "instance", instance)
    host = Host()
    initialise = instance.initialise_command(layout, host)
    assert any(str(distribution.basedir) in part for part in initialise), initialise
    command = instance.server_command(layout, host, ["--contract"])
    assert str(distribution.server) in command and command[-1] == "--contract", command
    secrets = {
        **instance.initialise_secrets(layout, "pw"),
        **instance.first_start_secrets(layout, "pw", host),
    }
    assert all(path.parent == layout.work for path in secrets), secrets
    assert all(folder.is_relative_to(layout.work) or folder == layout.socket
               for folder in instance.private_folders(layout))  # fmt: skip
    assert isinstance(instance.stop_signal, signal.Signals)
    assert layout.cnf.name and layout.error_log.name and layout.pid_file.name
    assert callable(instance.control) and isinstance(ControlRoute(port=1), ControlRoute)
