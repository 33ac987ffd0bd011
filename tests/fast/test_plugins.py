"""Plugins reach every command: a family a plugin module registers (the toy of tests/support/toys/)
is one a spec may name in `run`, `plan` and `engines list --family`, commands that read a
spec, or a family, before anything else; without the plugin the same calls refuse it. A
plugin is named by OLTPLAB_PLUGINS or by an installed package's entry point
(cli/plugins.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oltplab.cli.plugins import ENTRY_POINT_GROUP, PLUGINS_ENV
from tests.support.cli import oltplab

ROOT = Path(__file__).parents[2]
TOY = "tests.support.toys.toy_family"
SPEC = """
[[engines]]
name = "toy"
family = "toy"
source = {debian = "mariadb-server-core"}

[config.extra.toy]
innodb_adaptive_hash_index = "OFF"
"""
# Each command, and what it says once it has read the spec: `run` goes on to check its
# options (a wrong one is then its error), the others succeed.
COMMANDS = {
    "run": (["run", "s.toml", "-r", "out", "--measure", "bogus"], "--measure bogus"),
    "plan": (["plan", "s.toml"], ""),
    "engines list --family": (["engines", "list", "--family", "toy"], ""),
}


def _env(plugins: str | None = None, *folders: Path) -> dict[str, str]:
    """This environment, with the repository (where the toy is) and these folders on
    PYTHONPATH, and only these plugins."""
    env = {name: value for name, value in os.environ.items() if name != PLUGINS_ENV}
    path = [str(folder) for folder in (*folders, ROOT)] + [env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, path))
    return env | ({PLUGINS_ENV: plugins} if plugins else {})


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_plugin_family_is_known_to_each_command(command: str, tmp_path: Path) -> None:
    args, said = COMMANDS[command]
    (tmp_path / "s.toml").write_text(SPEC)
    refused = oltplab(*args, cwd=tmp_path, env=_env())
    assert refused.returncode == 2 and "expected" in refused.stderr, refused.stderr
    assert "family" in refused.stderr and "toy" in refused.stderr

    accepted = oltplab(*args, cwd=tmp_path, env=_env(TOY))
    assert "family" not in accepted.stderr, accepted.stderr
    assert accepted.returncode == (2 if said else 0) and said in accepted.stderr


def test_an_installed_package_names_its_plugin_by_entry_point(tmp_path: Path) -> None:
    site = tmp_path / "site"
    info = site / "toy_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\ntoy = {TOY}\n")
    listed = oltplab("engines", "list", "--family", "toy", cwd=tmp_path, env=_env(None, site))
    assert listed.returncode == 0, listed.stderr
    assert "toy releases" in listed.stdout


def test_a_plugin_that_cannot_be_imported_is_one_line_naming_it(tmp_path: Path) -> None:
    failed = oltplab("plan", "s.toml", cwd=tmp_path, env=_env("tests.support.toys.none_such"))
    assert failed.returncode == 2
    assert failed.stderr.count("\n") == 1 and "tests.support.toys.none_such" in failed.stderr
    assert "Traceback" not in failed.stderr
