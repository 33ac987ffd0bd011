"""Checks over the whole test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from oltplab.base.errors import OltplabError
from tests.consistency import results_problems, written_problems


@pytest.fixture(scope="session", autouse=True)
def outputs_never_contradict_themselves(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    """After the last test: over every results directory the tests created, nothing that
    oltplab wrote or would write prints `nan` or an estimate outside its own interval."""
    yield
    root = tmp_path_factory.getbasetemp()
    problems = written_problems(root)
    for ledger in sorted(root.rglob("ledger.sqlite")):
        try:
            problems += results_problems(ledger.parent)
        except OltplabError:
            continue  # a ledger damaged on purpose, or a tree made to be refused
    assert not problems, "\n".join(problems[:30])
