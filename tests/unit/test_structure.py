"""The shape the code keeps: small modules, and an engine lifecycle that only `engines/`
knows the kinds of (everything else asks the `Server` protocol)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "src" / "oltplab"
# The kinds of servers, instances, hosts and engine sources.
ENGINE_KINDS = {
    "PrivateInstance",
    "Endpoint",
    "Host",
    "SshHost",
    "Server",
    "EngineSpec",
    "MavenSource",
    "TarballSource",
    "BasedirSource",
    "DebianSource",
    "EndpointSource",
}


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_is_over_600_lines_and_the_runner_under_400():
    sizes = {path.relative_to(PACKAGE): len(path.read_text().splitlines()) for path in modules()}
    assert {path: n for path, n in sizes.items() if n > 600} == {}
    assert sizes[Path("runner.py")] < 400


def test_only_engines_asks_what_kind_of_server_host_or_source_it_has():
    found = []
    for path in modules():
        if path.is_relative_to(PACKAGE / "engines"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance"):
                continue
            kinds = node.args[1]
            names = {n.id for n in ast.walk(kinds) if isinstance(n, ast.Name)}
            names |= {n.attr for n in ast.walk(kinds) if isinstance(n, ast.Attribute)}
            if names & ENGINE_KINDS:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []
