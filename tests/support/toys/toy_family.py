"""A toy engine family, added as a new family is: this one module, its one `register` line
at the end, and nothing of oltplab changed. It runs MariaDB's binaries under a name of its
own: an engine of a spec says `family = "toy"` where its binary is MariaDB's.

`OLTPLAB_PLUGINS=tests.support.toys.toy_family oltplab run ...` loads it (cli/plugins.py). It passes
the family contract (tests/fast/test_families.py) and runs a real benchmark from the
command line (tests/engine/test_toy_family.py)."""

from __future__ import annotations

from typing import ClassVar

from oltplab.engines.families import register
from oltplab.engines.family import SelfDescription
from oltplab.engines.mariadb import MariadbFamily


class ToyFamily(MariadbFamily):
    name: ClassVar[str] = "toy"
    aliases: ClassVar[tuple[str, ...]] = ("toy",)
    example = SelfDescription(
        " Ver 10.11.5-MariaDB-toy for linux-systemd on x86_64 (MariaDB Server)",
        "10.11.5-MariaDB-toy-log mariadb.org binary distribution",
        "10.11.5",
    )

    @classmethod
    def claims(cls, said: str) -> bool:
        return "toy" in said and super().claims(said)


register(ToyFamily)
