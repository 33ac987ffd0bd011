"""The engine families oltplab knows, registered by name. A family is one module with one
subclass of engines/family.Family, and one `register` line: below for the built-in ones,
or in the module itself for a plugin (cli/plugins.py imports plugins at the command line's
start). Everything that differs between families (its files and commands, where a basedir
holds them, its configuration, its accounts, how a server says it is one, the words naming
it in result trees) is asked of the registered class, and registering it is what makes its
name one a spec may give. tests/support/family_contract.py is what every registered family passes.
"""

from __future__ import annotations

from oltplab.base.errors import EngineError
from oltplab.base.wire import WireProtocol
from oltplab.engines.config import ServerPaths, Setting, parse_version
from oltplab.engines.distribution import Distribution
from oltplab.engines.family import Family
from oltplab.engines.mariadb import MariadbFamily
from oltplab.engines.mysql import MysqlFamily
from oltplab.engines.percona import PerconaFamily
from oltplab.engines.postgresql import PostgresFamily
from oltplab.spec import ResolvedIntent
from oltplab.spec.catalog import FAMILIES

_FAMILIES: dict[str, type[Family]] = {}


def register(family: type[Family]) -> None:
    """Adds a family (its name is then one a spec may give, too)."""
    if _FAMILIES.get(family.name, family) is not family:
        raise EngineError(
            f"engine family {family.name!r} is registered already "
            f"({_FAMILIES[family.name].__module__}); a plugin's family needs a name of its own"
        )
    _FAMILIES[family.name] = family
    if family.name not in FAMILIES:
        FAMILIES.append(family.name)


def registered() -> list[type[Family]]:
    return list(_FAMILIES.values())


def family_named(name: str) -> type[Family]:
    if name not in _FAMILIES:
        raise EngineError(f"no engine family {name!r} (known: {', '.join(_FAMILIES)})")
    return _FAMILIES[name]


def family_of(distribution: Distribution) -> Family:
    """The family of a distribution, ready to run an instance of it."""
    return family_named(distribution.family)(distribution)


def intent_settings(family: str, version: str, intent: ResolvedIntent) -> list[Setting]:
    """The intent in this family's and release's options."""
    return family_named(family).tunables(parse_version(version), intent)


def option_file(
    family: str, version: str, engine: str, tier: str, paths: ServerPaths, tunables: list[Setting]
) -> str:
    """The whole option file of a private instance: my.cnf, postgresql.conf, ..."""
    found = family_named(family)
    server = found.server_settings(parse_version(version), paths)
    return found.option_file(engine, tier, server, tunables)


def _most_specific(found: list[type[Family]]) -> type[Family] | None:
    """Of families that all claim a server: a subclass over its base (MariaDB over MySQL),
    and one that claims by what the server says over one that claims any server of its
    protocol (what claims even an empty description)."""
    found = [f for f in found if not any(o is not f and issubclass(o, f) for o in found)]
    specific = [f for f in found if not f.claims("")]
    return next(iter(specific or found), None)


def family_said(said: str, protocol: WireProtocol) -> type[Family] | None:
    """The family of a running server of this protocol, from what it says of itself
    (VERSION() and @@version_comment)."""
    lowered = said.lower()
    return _most_specific(
        [f for f in _FAMILIES.values() if f.client_protocol == protocol and f.claims(lowered)]
    )


def family_of_binary(banner: str) -> tuple[type[Family], str] | None:
    """The family and release a server binary's `--version` output names (without the
    binary's path, which may name anything)."""
    lowered = banner.lower()
    found = [
        f for f in _FAMILIES.values() if f.claims(lowered) and f.version_in(banner) is not None
    ]
    family = _most_specific(found)
    if family is None:
        return None
    version = family.version_in(banner)
    assert version is not None
    return family, version


def server_binaries() -> list[str]:
    """Where a basedir may hold the server binary of any registered family."""
    return list(dict.fromkeys(b for family in _FAMILIES.values() for b in family.server_binaries))


def aliases() -> dict[str, str]:
    """Each word that names a family in result trees, and the family it names."""
    return {alias: family.name for family in _FAMILIES.values() for alias in family.aliases}


register(MysqlFamily)
register(MariadbFamily)
register(PerconaFamily)
register(PostgresFamily)
