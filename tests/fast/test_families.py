"""Every registered engine family passes the family contract (tests/support/family_contract.py): the
built-in ones, and the toy of tests/support/toys/toy_family.py, added as any new family is. That
the toy is all a new family takes (one module with its one `register` line, and nothing of
oltplab changed) is checked here too, as is the supplier asking the families where a
basedir holds their files and taking the family an engine names."""

from __future__ import annotations

from pathlib import Path

import pytest

from oltplab.analysis.points import dbms
from oltplab.base.errors import EngineError
from oltplab.engines.families import registered
from oltplab.engines.family import Family
from oltplab.engines.supplier import supply
from oltplab.spec.catalog import CATALOG, FAMILIES
from oltplab.spec.sources import EngineSpec
from tests.support.family_contract import check_family
from tests.support.toys import classes_and_registers, code_words, toy_family

SOURCE = Path(__file__).parents[2] / "src"
MARIADB = "Ver 10.11.5-MariaDB for linux-systemd on x86_64 (MariaDB Server)"


@pytest.mark.parametrize("family", registered(), ids=lambda family: family.name)
def test_every_registered_family_passes_the_contract(family: type[Family], tmp_path: Path) -> None:
    check_family(family, tmp_path)


def test_the_toy_is_among_them() -> None:
    assert toy_family.ToyFamily in registered()


def test_a_new_family_is_one_module_and_its_one_register_line() -> None:
    _, classes, registers = classes_and_registers(Path(toy_family.__file__))
    assert classes == ["ToyFamily"] and len(registers) == 1
    # Nothing of oltplab's code names it (its documentation may): no list of families,
    # binaries or aliases to extend.
    naming = {"toy", "ToyFamily", "toy_family", "tests.support.toys.toy_family"}
    assert [p for p in SOURCE.rglob("*.py") if naming & code_words(p)] == []


def test_a_family_s_kind_of_server_is_its_protocol_s() -> None:
    assert [dbms(name) for name in ("toy", "postgresql", "unknown")] == [
        "MySQL-family", "PostgreSQL", "MySQL-family",
    ]  # fmt: skip


def test_the_names_a_spec_may_give_are_the_registered_families() -> None:
    assert [family.name for family in registered()] == FAMILIES
    assert {entry.family for entry in CATALOG.values()} <= set(FAMILIES)


def _basedir(root: Path, *binaries: str) -> Path:
    """A basedir whose programs say they are MariaDB's, and its error messages."""
    for binary in binaries:
        program = root / binary
        program.parent.mkdir(parents=True, exist_ok=True)
        program.write_text(f"#!/bin/sh\necho '{program} {MARIADB}'\n")
        program.chmod(0o755)
    (root / "share" / "mariadb" / "english").mkdir(parents=True)
    (root / "share" / "mariadb" / "english" / "errmsg.sys").touch()
    return root


def _engine(basedir: Path, family: str | None = None) -> EngineSpec:
    return EngineSpec.model_validate(
        {"name": "e", "source": {"basedir": str(basedir)}, "family": family}
    )


def test_the_supplier_takes_a_family_s_files_where_the_family_says(tmp_path: Path) -> None:
    basedir = _basedir(tmp_path, "sbin/mysqld", "sbin/mariadbd", "bin/mariadb-install-db")
    found = supply(_engine(basedir))
    assert (found.family, found.version) == ("mariadb", "10.11.5")
    assert found.server == basedir / "sbin" / "mariadbd"  # its name, not the mysqld beside it
    assert found.install_db == basedir / "bin" / "mariadb-install-db"
    assert found.messages_dir == basedir / "share" / "mariadb"


def test_an_engine_may_name_a_family_that_derives_from_its_binary_s(tmp_path: Path) -> None:
    basedir = _basedir(tmp_path, "bin/mariadbd")
    assert supply(_engine(basedir, "toy")).family == "toy"
    for other in ("mysql", "postgresql"):
        with pytest.raises(EngineError, match=f"family {other}, but its server binary is mariadb"):
            supply(_engine(basedir, other))
