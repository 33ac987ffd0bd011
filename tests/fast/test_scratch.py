"""Where a run's scratch and its shared prepared datasets go."""

from __future__ import annotations

from pathlib import Path

import pytest

from oltplab.base.errors import OltplabError
from oltplab.store.scratch import SNAPSHOTS_ENV, snapshot_store


def test_a_run_given_no_store_shares_the_one_the_environment_names(tmp_path, monkeypatch):
    monkeypatch.delenv(SNAPSHOTS_ENV, raising=False)
    assert snapshot_store(None) is None
    monkeypatch.setenv(SNAPSHOTS_ENV, str(tmp_path / "shared"))
    assert snapshot_store(None) == tmp_path / "shared"
    assert snapshot_store(Path("given")) == Path("given")
    (tmp_path / "file").write_text("")
    monkeypatch.setenv(SNAPSHOTS_ENV, str(tmp_path / "file"))
    with pytest.raises(OltplabError, match=rf"^{SNAPSHOTS_ENV}=.*/file: not a folder"):
        snapshot_store(None)
