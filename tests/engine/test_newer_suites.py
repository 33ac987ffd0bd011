"""Releases from Debian's newer suites run here beside older ones: MariaDB 11.8 (trixie)
and MySQL 9.7 (sid), built for a newer C library than this host's, fetched with their
libraries into the cache and pointed at them. The host's apt lists and dpkg database are
left as they were."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path

from tests.support.cli import oltplab
from tests.support.engines import cells, spec_text

NEWER = {"mariadb-11.8.9": "11.8.9-MariaDB", "mysql-9.7.4": "9.7.4"}
ENGINES = ["mariadb-11.4.5", "mariadb-11.8.9", "mysql-8.0.31", "mysql-9.7.4"]


def apt_state() -> dict[str, str]:
    """The sha256 of the dpkg database and of every apt list of the host."""
    files = [Path("/var/lib/dpkg/status"), *sorted(Path("/var/lib/apt/lists").rglob("*"))]
    return {
        str(path): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in files
        if path.is_file() and not path.name.startswith("lock")
    }


def servers_below(ancestor: int, marker: str) -> dict[int, tuple[str, bool]]:
    """Every process whose program is a fetched release's server (its cached `usr/sbin`) or
    a fetched release's own loader, and whose command line names `marker` (the run's
    results, where its servers' files are: other runs on this host use the same cache):
    pid -> (its program, whether `ancestor` started it, at any depth). The host's loader is
    not one: pt-mysql-summary's `ldd` runs it."""
    found = {}
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            command = argv[0].decode()
            if "/dist/" not in command or marker.encode() not in b" ".join(argv):
                continue
            pid, chain = int(proc.name), []
            while pid > 1:
                chain.append(pid)
                stat = Path(f"/proc/{pid}/stat").read_text()
                pid = int(stat.rpartition(")")[2].split()[1])
            found[int(proc.name)] = (command, ancestor in chain)
        except (OSError, ValueError):
            continue  # gone while being read
    return found


def test_newer_suite_releases_run_beside_older_ones(tmp_path: Path) -> None:
    before = apt_state()
    (tmp_path / "s.toml").write_text(
        spec_text(
            ENGINES,
            threads=[1],
            measure=2,
            extra='[config]\nredo_capacity = "64M"\n',
        )
    )
    log = tmp_path / "run.out"
    with log.open("w") as out:
        run = subprocess.Popen(
            [sys.executable, "-m", "oltplab", "run", "s.toml", "--results", "out",
             # No check reads the engine summary: 2-5 s a session left out.
             "--telemetry", "default,-pt-mysql-summary"],
            cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
        seen: dict[int, tuple[str, bool]] = {}
        while run.poll() is None:
            seen.update(servers_below(run.pid, str(tmp_path / "out")))
            time.sleep(0.2)
    assert run.returncode == 0, log.read_text()

    # Each suite release's server ran as its own program, a child of the run; no process
    # ran through a suite's loader (the loader fetched beside usr/, under dist/).
    programs = {Path(command).name for command, _ in seen.values()}
    assert {"mariadbd", "mysqld"} <= programs, seen
    assert all(ours and "ld-linux" not in command for command, ours in seen.values()), seen

    rows = cells(tmp_path / "out")
    assert len(rows) == len(ENGINES) and {r["status"] for r in rows} == {"done"}
    versions = {r["engine"]: r["server_version"] for r in rows}
    for engine, version in NEWER.items():
        assert versions[engine].startswith(version), versions

    report = oltplab("report", "out", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    markdown = (tmp_path / "out" / "report" / "report.md").read_text()
    engines_table = markdown[markdown.index("| engine | family | version | SELECT VERSION()") :]
    for engine, version in NEWER.items():
        assert f"| {engine} | {engine.split('-')[0]} | {engine.split('-')[1]} | {version}" in (
            engines_table
        ), engines_table
    progression = markdown[markdown.index("## 4.") : markdown.index("## 5.")]
    for engine in ENGINES:
        assert engine in progression, progression
    configuration = markdown[markdown.index("## 2.") : markdown.index("## 3.")]
    assert "innodb_snapshot_isolation" in configuration, configuration

    # A suite that has moved on from the version expected says so, and fetches nothing.
    (tmp_path / "moved.toml").write_text(
        'workloads = ["oltp_read_only"]\n[[engines]]\nname = "mariadb-pinned"\n'
        'source = {debian = "mariadb-server-core", suite = "trixie", version = "1:11.8.0-1"}\n'
    )
    moved = oltplab("engines", "fetch", "mariadb-pinned", "--spec", "moved.toml", cwd=tmp_path)
    assert moved.returncode != 0
    error = moved.stderr.strip().splitlines()
    assert len(error) == 1 and "the suite now has 1:11.8.9" in error[0], moved.stderr
    assert "not 1:11.8.0-1 as expected" in error[0] and "pin the new one" in error[0]

    assert apt_state() == before
