"""A scheduler is one module and one registration line: the toy scheduler of
tests/support/toys/toy_scheduler.py, a plugin with its own `register` line, passes the contract
every scheduler passes (Slurm's run in tests/engine/test_distribute.py), and
`oltplab submit toy`, `status` and `cancel` work for it from the command line with nothing
else of oltplab naming it."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oltplab.base.errors import OltplabError
from oltplab.cli import app, plugins, submit
from oltplab.cli.plugins import ENTRY_POINT_GROUP, PLUGINS_ENV
from oltplab.distribute.layout import read_distributed
from oltplab.distribute.schedulers import registered, scheduler_named
from oltplab.distribute.slurm import Slurm
from tests.support.cli import oltplab
from tests.support.scheduler_contract import SPEC, check_scheduler, distributed_run
from tests.support.toys import code_words
from tests.support.toys.toy_scheduler import Toy

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "src" / "oltplab"
TOY = ROOT / "tests" / "support" / "toys" / "toy_scheduler.py"


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Path]:
    """A distributed run's directory; whatever stand-in the toy left running is stopped."""
    yield tmp_path / "run"
    if (tmp_path / "run" / "distribute.json").exists():
        Toy().cancel(read_distributed(tmp_path / "run"))


def test_a_scheduler_registered_in_one_line_passes_the_contract(run: Path) -> None:
    check_scheduler(Toy(), distributed_run(run, Toy.name))


def test_cancel_goes_through_the_scheduler_the_run_records(run: Path) -> None:
    distributed = distributed_run(run, Toy.name)
    Toy().submit(distributed, [2])
    done = CliRunner().invoke(app, ["cancel", str(run)])
    assert done.exit_code == 0, done.output
    assert "cancelled shard(s): 2" in done.output and "Next: oltplab status" in done.output
    not_distributed = oltplab("cancel", ".", cwd=run.parent)
    assert not_distributed.returncode == 2
    assert "not a distributed run" in not_distributed.stderr


def test_an_unknown_scheduler_is_named_with_the_known_ones() -> None:
    with pytest.raises(OltplabError, match=r"scheduler 'pbs'.*known: k8s, slurm, toy"):
        scheduler_named("pbs")


def test_the_toy_runs_from_the_command_line_as_a_plugin(run: Path) -> None:
    """Its command, built from its class (its option --seconds a field of it), submits;
    status and cancel find it through the run's distribute.json."""
    spec = run.parent / "spec.toml"
    spec.write_text(SPEC)
    plugin = {**os.environ, PLUGINS_ENV: "tests.support.toys.toy_scheduler"}

    def toy(*args: str, env: dict[str, str] = plugin) -> str:
        done = oltplab(*args, cwd=ROOT, env=env)
        assert done.returncode == 0, done.stderr
        return " ".join(done.stdout.split())  # as one line, however the terminal wrapped it

    helped = toy("submit", "toy", "--help")
    assert "Run each shard as a background process" in helped and "--seconds" in helped
    submit = ("submit", "toy", str(spec), "-n", "2", "-r", str(run), "--seconds", "300")
    assert "submitted toy job toy-1: shard(s) 1, 2 of 2" in toy(*submit)
    assert "1/2" in (status := toy("status", str(run))) and status.count("job running") == 2
    assert "every shard is complete, queued or running" in toy(*submit)
    assert "cancelled shard(s): 1, 2" in toy("cancel", str(run))
    assert "submitted toy job toy-2: shard(s) 1, 2 of 2" in toy(*submit)
    assert "cancelled shard(s): 1, 2" in toy("cancel", str(run))
    # Without the plugin, oltplab knows no toy: the module was all of it.
    mistyped = oltplab("submit", "toi", cwd=ROOT, env=plugin)
    assert mistyped.returncode == 2 and "Did you mean 'toy'?" in mistyped.stderr
    unknown = oltplab("submit", "toy", "--help", cwd=ROOT)
    assert unknown.returncode == 2 and "No such command 'toy'" in unknown.stderr
    plugin_gone = oltplab("status", str(run), cwd=ROOT)
    assert plugin_gone.returncode == 2 and "scheduler 'toy'" in plugin_gone.stderr


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ((), Slurm()),
        (
            ("--partition", "p", "--time", "1:00", "--sbatch-arg", "--mem=4G", "--sbatch-arg",
             "--qos=x"),
            Slurm(partition="p", time="1:00", extra=("--mem=4G", "--qos=x")),
        ),
    ],
)  # fmt: skip
def test_submit_slurm_s_options_make_its_scheduler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: tuple[str, ...], expected: Slurm
) -> None:
    made = []
    monkeypatch.setattr(submit, "_submit", lambda asked, made_: made.append(
        (asked.spec_path, asked.results, asked.shards, made_)))  # fmt: skip
    args = ["submit", "slurm", "spec.toml", "-n", "2", "-r", str(tmp_path / "run"), *options]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    assert made == [(Path("spec.toml"), tmp_path / "run", 2, expected)]


def test_a_plugin_that_does_not_import_is_one_line_naming_it(tmp_path: Path) -> None:
    env = {**os.environ, PLUGINS_ENV: "tests.support.toys.no_such_toy"}
    done = oltplab("status", ".", cwd=ROOT, env=env)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert (
        "plugin tests.support.toys.no_such_toy (OLTPLAB_PLUGINS) could not be imported"
        in done.stderr
    )


def test_an_installed_plugin_is_imported_from_its_entry_point(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    point = EntryPoint("toy", "tests.support.toys.no_such_toy", ENTRY_POINT_GROUP)
    monkeypatch.setattr(
        plugins, "entry_points", lambda group: [point] if group == ENTRY_POINT_GROUP else []
    )
    monkeypatch.delenv(PLUGINS_ENV, raising=False)
    with pytest.raises(
        OltplabError, match=r"plugin tests.support.toys.no_such_toy \(entry point toy "
    ):
        plugins.load_plugins()


def _imported_by(module: str) -> set[str]:
    """oltplab's modules that import `module` (oltplab.distribute.slurm, say)."""
    package, _, last = module.rpartition(".")
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            if module in names or (package in names and last in names):
                found.add(str(path.relative_to(PACKAGE)))
    return found


def _register_calls(path: Path) -> int:
    return sum(
        isinstance(node, ast.Call) and getattr(node.func, "id", "") == "register"
        for node in ast.walk(ast.parse(path.read_text()))
    )


def test_a_new_scheduler_is_one_module_and_one_registration_line() -> None:
    """What the contributor guide says: oltplab's own schedulers are each a module that only
    the registration in distribute/__init__.py imports (the command line names none: its
    `submit` commands come from the registry), and the toy is its module alone, with one
    `register` call, that no file of oltplab names."""
    own = {
        name: type(scheduler_named(name)).__module__
        for name in registered()
        if type(scheduler_named(name)).__module__.startswith("oltplab.")
    }
    assert own == {"slurm": "oltplab.distribute.slurm", "k8s": "oltplab.distribute.kubernetes"}
    for module in own.values():
        assert _imported_by(module) == {"distribute/__init__.py"}, module
    assert _register_calls(PACKAGE / "distribute" / "__init__.py") == len(own)
    assert _register_calls(TOY) == 1
    assert type(scheduler_named("toy")).__module__ == "tests.support.toys.toy_scheduler"
    # Nothing of oltplab's code names it (its documentation may).
    naming = {"toy", "Toy", "toy_scheduler", "tests.support.toys.toy_scheduler"}
    assert [p for p in PACKAGE.rglob("*.py") if naming & code_words(p)] == []


def test_an_option_slurm_sets_itself_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    args = ["submit", "slurm", "spec.toml", "-n", "2", "-r", str(tmp_path / "run")]
    done = CliRunner().invoke(app, [*args, "--sbatch-arg", "--array=1-3"])
    assert isinstance(done.exception, OltplabError)
    assert "oltplab sets --array itself" in str(done.exception)
    assert not (tmp_path / "run").exists()
