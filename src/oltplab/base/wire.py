"""The wire protocols oltplab reaches servers by, each one value that its families and
control connections hold: what differs between MySQL's protocol and PostgreSQL's beyond
the family (sysbench's driver, the kind of server a report names, InnoDB's counters, the
tool that summarises a server's settings) is read off it, never branched on by name."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WireProtocol:
    name: str
    sysbench_driver: str  # sysbench's --db-driver
    kind: str  # the kind of server, as reports name it
    innodb: bool  # whether InnoDB's metrics and status are there to read
    summary_tool: str | None  # what summarises a running server's settings, if anything


MYSQL = WireProtocol("mysql", "mysql", "MySQL-family", innodb=True, summary_tool="pt-mysql-summary")
POSTGRESQL = WireProtocol("postgresql", "pgsql", "PostgreSQL", innodb=False, summary_tool=None)
