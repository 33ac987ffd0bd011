"""The intent across PostgreSQL's majors, against what the releases said.

tests/data/postgresql/pg_settings.json: pg_settings as oltplab recorded it (units applied)
after starting catalog releases of 10, 11, 12, 13, 14, 16, 17 and 18 with buffer_pool = "128M",
one thread and the default intent otherwise, taken from those runs' ledgers.
tests/data/postgresql/describe_config.json: which of the settings `asked` each major's
`postgres --describe-config` lists (10.23 to 18.4, every major)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from oltplab.analysis.model import Analysis
from oltplab.engines.config import check_variables, expected_variables, extra_settings
from oltplab.engines.families import family_named, intent_settings
from oltplab.report.environment import configuration
from oltplab.spec import parse_spec
from oltplab.spec.catalog import release_key
from tests.support.engines import PG_PATHS

RECORDED = json.loads(
    (Path(__file__).parent.parent / "data" / "postgresql" / "pg_settings.json").read_text()
)
RELEASES = list(RECORDED)
DESCRIBED = json.loads(
    (Path(__file__).parent.parent / "data" / "postgresql" / "describe_config.json").read_text()
)
M = 1024**2


def intent(config: str = 'buffer_pool = "128M"'):
    """As those runs resolved it: one thread, so max_connections is 151."""
    spec = parse_spec(
        f'engines = [{{name = "postgresql-17.10"}}]\n[protocol]\nthreads = [1]\nwarmup_threads = 1\n'
        f"[config]\n{config}",
        "t",
    )
    return spec.resolve(spec.tier_list[0])


def version(engine: str) -> str:
    return engine.split("-")[1]


@pytest.mark.parametrize("engine", RELEASES)
def test_each_release_showed_the_intent_it_was_given(engine):
    """The live check of each recorded start, again: every setting written is one the
    release has, with the value intended."""
    expected = expected_variables(intent_settings("postgresql", version(engine), intent()))
    assert set(expected) == {
        "shared_buffers", "max_wal_size", "synchronous_commit", "full_page_writes",
        "max_connections", "wal_level",
    }  # fmt: skip
    assert check_variables(expected, RECORDED[engine]) == []


@pytest.mark.parametrize("engine", RELEASES)
def test_every_variant_of_the_intent_names_settings_each_release_has(engine):
    variants = [
        intent("binlog = false\nflush_log_at_trx_commit = 2\ndoublewrite = false"),
        replace(intent(), redo_capacity=8 * M),
        intent('buffer_pool = "4G"\nredo_capacity = "16G"\nmax_connections = 2000'),
    ]
    for tier in variants:
        written = expected_variables(intent_settings("postgresql", version(engine), tier))
        assert set(written) <= set(RECORDED[engine]), engine
    # wal_level minimal needs no WAL senders; 10 and later allow 10 by default.
    assert RECORDED[engine]["max_wal_senders"] == "10"


@pytest.mark.parametrize("release", list(DESCRIBED["listed"]))
def test_every_major_knows_every_setting_written_to_it(release):
    """postgres refuses to start on a setting it does not know: whatever the intent, the
    family writes only settings the major lists (10 has no jit, 11 no shared_memory_type,
    13 replaced wal_keep_segments by wal_keep_size, 18 added io_method)."""
    tiers = [intent(), intent("binlog = false\nflush_log_at_trx_commit = 0\ndoublewrite = false")]
    written = {s.option for t in tiers for s in intent_settings("postgresql", release, t)}
    server = family_named("postgresql").server_settings(release_key(release), PG_PATHS)
    written |= {s.option for s in server}
    assert written <= set(DESCRIBED["asked"])  # a new setting: record the majors' lists again
    assert written <= set(DESCRIBED["listed"][release])


def test_wal_keep_segments_became_wal_keep_size_and_neither_is_written():
    """13 replaced the count of segments by a size; oltplab keeps no WAL for standbys."""
    for engine, settings in RECORDED.items():
        newer = release_key(version(engine)) >= (13,)
        assert ("wal_keep_size" in settings) is newer
        assert ("wal_keep_segments" in settings) is not newer
    for tier in (intent(), intent("binlog = false")):
        written = {s.option for s in intent_settings("postgresql", "12.22", tier)}
        assert not written & {"wal_keep_size", "wal_keep_segments"}


def test_io_method_and_jit_appear_where_the_release_has_them():
    assert [e for e, s in RECORDED.items() if "io_method" in s] == ["postgresql-18.4"]
    assert [e for e, s in RECORDED.items() if "jit" not in s] == ["postgresql-10.23"]


def test_the_report_flags_defaults_the_majors_changed():
    """Across a series the intent's settings stay equal; what 18's initdb, 14's checkpoints
    and 12's JIT and autovacuum changed is in the "Settings that differ" table."""
    dataset = SimpleNamespace(
        variables={(engine, "128M"): settings for engine, settings in RECORDED.items()},
        tiers=lambda: ["128M"],
        engine_names=lambda: RELEASES,
    )
    text = "\n".join(configuration(cast(Analysis, SimpleNamespace(dataset=dataset)), []))
    differing = text.split("### Settings that differ between engines")[1]
    rows = {line.split("|")[2].strip() for line in differing.splitlines() if "| 128M |" in line}
    assert rows == {
        "data_checksums", "checkpoint_completion_target", "effective_io_concurrency", "jit",
        "autovacuum_vacuum_cost_delay",
    }  # fmt: skip
    assert "postgresql-11.22: off; postgresql-12.22: on" in differing  # jit
    assert "postgresql-18.4: on" in differing and "postgresql-17.10: off" in differing
    # shown in the table of key settings, though only 18 has it
    assert "| io_method | " + "- | " * (len(RELEASES) - 1) + "worker |" in text


def test_a_setting_of_some_releases_goes_in_their_series_entry():
    """[config.extra.postgresql] is written for every release; a series entry's own extra
    only for its releases, checked live like the intent."""
    spec = parse_spec(
        'engines = [{series = "postgresql >=16.14, <17"},'
        ' {series = "postgresql >=18", extra = {io_method = "sync"}}]',
        "t",
    )
    assert {e.name: e.extra for e in spec.engines} == {
        "postgresql-16.14": {},
        "postgresql-18.4": {"io_method": "sync"},
    }
    assert expected_variables(extra_settings(spec.engine("postgresql-18.4").extra)) == {
        "io_method": "sync"
    }
