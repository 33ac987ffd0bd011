"""The host summary is taken once a day per host and kept in oltplab's cache; a run copies
the one it refers to and says when it was taken (issue 59)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from oltplab.telemetry.summaries import cache_files, host_identity, host_summary

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("OLTPLAB_CACHE", str(tmp_path / "cache"))
    # No pt-summary to run: a summary that must be taken again says it could not be.
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    return tmp_path / "cache" / "host-summary"


def plant(cache, taken_at: datetime, **changed: object) -> None:
    """A summary in the cache where this host's goes, recorded as taken of a host with
    the changed facts."""
    text, facts = cache_files(host_identity())
    cache.mkdir(parents=True)
    text.write_text("# pt-summary of this host\n")
    recorded = {"taken_at": taken_at.isoformat(), "host": host_identity() | changed}
    facts.write_text(json.dumps(recorded))


def test_a_summary_of_this_host_under_a_day_old_is_copied_with_its_time(cache, tmp_path):
    plant(cache, NOW - timedelta(hours=23))
    (tmp_path / "out").mkdir()
    found = host_summary(tmp_path / "out", NOW)
    assert found.taken_at == NOW - timedelta(hours=23)
    assert (tmp_path / "out" / "pt-summary.txt").read_text() == "# pt-summary of this host\n"
    assert found.describe(NOW) == (
        "host summary: pt-summary taken 2026-12-05 13:00 UTC (23h 00m ago)"
    )


@pytest.mark.parametrize(
    ("age", "changed"),
    [(timedelta(hours=25), {}), (timedelta(hours=1), {"kernel": "another"})],
    ids=["older than a day", "another host"],
)
def test_an_old_summary_or_another_hosts_is_taken_again(cache, tmp_path, age, changed):
    plant(cache, NOW - age, **changed)
    (tmp_path / "out").mkdir()
    found = host_summary(tmp_path / "out", NOW)
    assert found.taken_at is None and found.missing == "pt-summary not installed"
    assert not (tmp_path / "out" / "pt-summary.txt").exists()
