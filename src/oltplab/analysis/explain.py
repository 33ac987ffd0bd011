"""Why two releases differ: what their settings say, what each transaction costs them, and
where their servers spend the time, side by side."""

from __future__ import annotations

from dataclasses import dataclass

from oltplab.analysis.dataset import Dataset
from oltplab.analysis.profiles import FunctionChange, Profile, gained_most, profile_of
from oltplab.analysis.telemetry import OperationRow

# Variables that name this instance (paths, ports, ids, versions), not how it behaves.
_IDENTITY = {
    "version", "version_comment", "version_source_revision", "version_compile_os",
    "version_compile_machine", "hostname", "port", "socket", "pid_file", "server_uuid",
    "server_id", "report_host", "report_port", "timestamp", "gtid_executed",
    "gtid_purged", "gtid_binlog_pos", "gtid_current_pos", "gtid_slave_pos",
    "innodb_version", "protocol_version", "license", "log_error", "wsrep_node_name",
    "system_time_zone", "time_zone", "mysqlx_port", "mysqlx_socket", "admin_port",
    "server_uid", "server_version", "server_version_num",
}  # fmt: skip


@dataclass(frozen=True)
class Explanation:
    before: str  # the last good release
    after: str  # the first changed one
    settings: list[tuple[str, str, str]]  # variable, before, after
    operations: list[tuple[str, float | None, float | None]]  # per transaction
    before_profile: Profile | None
    after_profile: Profile | None
    # Of a release without a profile: the notes of each of its measured cells (the
    # profiler writes down why it took no sample there).
    unprofiled: dict[str, list[str]]

    @property
    def functions(self) -> list[FunctionChange]:
        if self.before_profile is None or self.after_profile is None:
            return []
        return gained_most(self.before_profile, self.after_profile)


def _behaves(name: str, value: str) -> bool:
    return name not in _IDENTITY and "/" not in value


def setting_differences(dataset: Dataset, before: str, after: str) -> list[tuple[str, str, str]]:
    """Variables (SHOW GLOBAL VARIABLES, per tier) whose values differ between the two."""
    found: dict[str, tuple[str, str]] = {}
    for (engine, tier), values in dataset.variables.items():
        if engine != before:
            continue
        other = dataset.variables.get((after, tier), {})
        for name in sorted(values.keys() | other.keys()):
            a, b = values.get(name, "(absent)"), other.get(name, "(absent)")
            if a != b and _behaves(name, a) and _behaves(name, b):
                found.setdefault(name, (a, b))
    return [(name, a, b) for name, (a, b) in sorted(found.items())]


def per_operation(
    rows: list[OperationRow], before: str, after: str
) -> list[tuple[str, float | None, float | None]]:
    """Each per-transaction figure of the two, over their cells (the first row of each)."""
    mine = {row.engine: row for row in rows}
    if before not in mine or after not in mine:
        return []
    a, b = vars(mine[before].figures), vars(mine[after].figures)
    return [(name, a[name], b[name]) for name in a]


def explain(dataset: Dataset, rows: list[OperationRow], before: str, after: str) -> Explanation:
    profiles = {engine: profile_of(engine, dataset.cells) for engine in (before, after)}
    return Explanation(
        before,
        after,
        setting_differences(dataset, before, after),
        per_operation(rows, before, after),
        profiles[before],
        profiles[after],
        {
            engine: [c.notes for c in dataset.cells if c.engine == engine and c.measured]
            for engine, profile in profiles.items()
            if profile is None
        },
    )
