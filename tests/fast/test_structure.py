"""The shape the code keeps: packages in layers that only import downward, small modules,
and an engine lifecycle that only `engines/` knows the kinds of (everything else asks the
`Server` protocol)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "src" / "oltplab"
# Lowest first: a package imports only from layers below its own (and from itself); the
# packages of one layer do not import each other. `oltplab/__init__.py` (the version) is
# open to all.
LAYERS = (
    ("base",),
    ("spec",),
    ("sysbench",),
    ("workloads",),
    ("plan",),
    ("store",),
    ("kube",),
    ("engines",),
    ("telemetry",),
    ("measure",),
    ("analysis", "importers"),
    ("report",),
    ("experiments", "distribute"),
    ("cli",),
    ("__main__",),
)
LAYER_OF = {package: level for level, layer in enumerate(LAYERS) for package in layer}
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
    "NpmSource",
    "EndpointSource",
}


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def package_of(path: Path) -> str:
    """`measure` for src/oltplab/measure/runner.py, `__main__` for src/oltplab/__main__.py."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[0]


def imported_packages(source: str) -> list[tuple[int, str]]:
    """(line, package) for every oltplab package the source imports, at any depth (an
    import inside a function counts as much as one at the top)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] != "oltplab":
                continue
            names = [parts[1]] if len(parts) > 1 else [a.name for a in node.names]
            found += [(node.lineno, name) for name in names if name != "__version__"]
        elif isinstance(node, ast.Import):
            found += [
                (node.lineno, a.name.split(".")[1])
                for a in node.names
                if a.name.startswith("oltplab.")
            ]
    return found


def upward_imports(package: str, source: str) -> list[str]:
    """The imports of a module of `package` that reach a layer not below its own."""
    return [
        f"line {line}: {package} imports {other}"
        for line, other in imported_packages(source)
        if other != package and LAYER_OF[other] >= LAYER_OF[package]
    ]


def test_every_package_has_a_layer():
    packages = {package_of(path) for path in modules()} - {"__init__"}
    assert packages == set(LAYER_OF)


def test_packages_import_only_downward():
    found = [
        f"{path.relative_to(PACKAGE)} {problem}"
        for path in modules()
        if package_of(path) != "__init__"
        for problem in upward_imports(package_of(path), path.read_text())
    ]
    assert found == []


def test_an_upward_import_is_caught():
    assert upward_imports("store", "from oltplab.measure.runner import run\n") == [
        "line 1: store imports measure"
    ]
    lazy = "def f():\n    from oltplab.report import export\n"
    assert upward_imports("analysis", lazy) == ["line 2: analysis imports report"]
    assert upward_imports("distribute", "from oltplab.experiments import bisect\n") == [
        "line 1: distribute imports experiments"
    ]
    assert upward_imports("report", "from oltplab.analysis.model import Analysis\n") == []


def test_no_module_is_over_600_lines_and_the_runner_under_400():
    sizes = {path.relative_to(PACKAGE): len(path.read_text().splitlines()) for path in modules()}
    assert {path: n for path, n in sizes.items() if n > 600} == {}
    assert sizes[Path("measure/runner.py")] < 400


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


def test_a_module_name_and_a_class_name_each_mean_one_thing():
    """No two modules under src/ share a file name, and no two top-level classes a name: a
    name read in a traceback, a log or a review points at one place."""
    modules: dict[str, list[str]] = {}
    classes: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(PACKAGE))
        if path.name != "__init__.py":
            modules.setdefault(path.name, []).append(where)
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, []).append(where)
    assert {name: found for name, found in modules.items() if len(found) > 1} == {}
    assert {name: found for name, found in classes.items() if len(found) > 1} == {}


def test_no_function_takes_ten_parameters_or_more():
    """A value that needs ten is a type of its own (a frozen dataclass; a command's options
    are one, bound to Typer by cli/options.py)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                given = node.args
                count = len(given.posonlyargs + given.args + given.kwonlyargs)
                count += (given.vararg is not None) + (given.kwarg is not None)
                if count >= 10:
                    found.append(f"{path.relative_to(PACKAGE)}:{node.name} ({count})")
    assert found == []


def test_the_command_line_only_binds_calls_and_draws():
    """`cli/` is an edge: options are declared where the work is done and bound by one
    binder, a command's body is one call into the layer that owns it, and what it returns
    is drawn by `cli/display.py`. So the package stays small, its functions short, and no
    command writes a file of the results itself."""
    cli = sorted((PACKAGE / "cli").glob("*.py"))
    assert sum(len(path.read_text().splitlines()) for path in cli) <= 1600
    long, writing = [], []
    for path in cli:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.end_lineno - node.lineno + 1 > 40:
                long.append(f"{path.name}:{node.name}")
            if isinstance(node, ast.Attribute) and node.attr in {"write_text", "write_bytes"}:
                writing.append(f"{path.name}:{node.lineno}")
    assert long == [] and writing == []
    assert not any("RunContext" in path.read_text() for path in modules())


def test_the_command_line_starts_without_the_analysis():
    """`status` and `--help` answer at once: the command line loads NumPy's and SciPy's
    analysis only in the commands that use it."""
    import subprocess
    import sys

    probe = "import sys, oltplab.cli; print(sorted({m.split('.')[0] for m in sys.modules}))"
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert "'scipy'" not in loaded and "'matplotlib'" not in loaded
