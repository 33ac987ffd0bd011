"""The CI example (examples/ci/github-actions.yml, issue 47 finding 10) is a workflow that
parses, gates with `oltplab gate`, keeps the JUnit XML, and treats "undecided" as its own
status; every oltplab command in it parses as the CLI would."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from oltplab.base.errors import EXIT_UNDECIDED
from tests.support.cli import parse

WORKFLOW = Path(__file__).parents[2] / "examples" / "ci" / "github-actions.yml"


def test_the_ci_example_gates_keeps_the_junit_xml_and_parses() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    steps = workflow["jobs"]["gate"]["steps"]
    scripts = "\n".join(step.get("run", "") for step in steps)
    commands = [
        line.strip() for line in scripts.splitlines() if line.strip().startswith("oltplab ")
    ]
    assert any(c.startswith("oltplab gate ") for c in commands), commands
    env = workflow["jobs"]["gate"]["env"]
    for command in commands:
        text = re.sub(r"\s*>>.*$", "", command)
        for name, value in env.items():
            text = text.replace(f'"${name}"', value)
        parse(shlex.split(text)[1:])
    assert f'"$status" -eq {EXIT_UNDECIDED}' in scripts
    uploaded = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact"))
    assert "gate/gate.xml" in uploaded["with"]["path"]
