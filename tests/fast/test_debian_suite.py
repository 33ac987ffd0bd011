"""A newer Debian suite's package: the closure apt computes for it (from a recorded
simulation), without what only maintainer scripts use, and a source that says what it
pins."""

from __future__ import annotations

from pathlib import Path

import pytest

from oltplab.base.errors import SpecError
from oltplab.engines.debian_suite import closure
from oltplab.spec import parse_spec

RECORDED = Path(__file__).parents[1] / "data" / "apt" / "trixie_mariadb_simulated.txt"


def test_the_closure_is_what_apt_would_install_but_the_common_packages() -> None:
    packages = closure(RECORDED.read_text())
    names = [name for name, _ in packages]
    assert names[0] == "gcc-14-base" and names[-1] == "mariadb-server-core"
    assert dict(packages)["mariadb-server-core"] == "1:11.8.9+ds-0+deb13u1"
    assert dict(packages)["libc6"] == "2.41-12+deb13u5"  # the suite's loader comes with it
    # configuration for maintainer scripts, never read by a server started with its own file
    assert "mysql-common" not in names and "mariadb-common" not in names
    assert len(packages) == 16


def source_spec(source: str) -> str:
    return f'workloads = ["oltp_read_only"]\n[[engines]]\nname = "x"\nsource = {source}\n'


def test_a_pin_without_a_suite_is_refused_in_one_line() -> None:
    with pytest.raises(SpecError) as refused:
        parse_spec(source_spec('{debian = "mariadb-server-core", version = "1:11.8.9"}'), "s.toml")
    message = str(refused.value)
    assert "s.toml" in message and "add suite (trixie, sid, ...)" in message
    assert "\n" not in message.strip()


def test_a_suite_source_names_its_suite_version_and_companions() -> None:
    spec = parse_spec(
        source_spec(
            '{debian = "mariadb-server-core", suite = "trixie", version = "1:11.8.9+ds-0+deb13u1",'
            ' also = ["mariadb-client-core"]}'
        ),
        "s.toml",
    )
    source = spec.engines[0].source
    assert source is not None
    assert source.model_dump(exclude_none=True) == {
        "debian": "mariadb-server-core",
        "suite": "trixie",
        "version": "1:11.8.9+ds-0+deb13u1",
        "also": ["mariadb-client-core"],
    }
