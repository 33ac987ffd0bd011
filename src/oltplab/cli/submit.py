"""`oltplab submit`: one command per registered scheduler, built from its class when asked
for, so that a scheduler a plugin registers has its command too."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path
from typing import Annotated, Any

import typer

from oltplab.base.errors import OltplabError
from oltplab.cli.app import Command, Group, console, flag
from oltplab.cli.shards import ShardsOption
from oltplab.distribute.layout import prepare, shard_state
from oltplab.distribute.schedulers import (
    ChecksResults,
    Scheduler,
    SubmitOption,
    described,
    registered,
    scheduler_named,
    submit_options,
)
from oltplab.spec import load_spec

SpecArgument = Annotated[Path, typer.Argument(help="The spec file (TOML).", metavar="SPEC")]
ResultsOption = Annotated[
    Path,
    typer.Option("--results", "-r", help="The run's directory, on a filesystem every node sees."),
]
# What every scheduler's command takes before its own options.
_COMMON = ("spec_path", "shards", "results")
_RESUMES = "submitting again runs only the shards that are not complete and not queued or running"


def _submit(spec_path: Path, results: Path, shards: int, scheduler: Scheduler) -> None:
    """The shards that are not complete and not queued or running, to the scheduler."""
    spec = load_spec(spec_path)
    if isinstance(scheduler, ChecksResults):
        scheduler.check_results(results.resolve())
    distributed = prepare(results.resolve(), spec, shards, scheduler.name)
    states = scheduler.states(distributed)
    todo = []
    for index in range(1, shards + 1):
        busy = states.get(index)
        if shard_state(spec, distributed, index).complete or (busy is not None and busy.active):
            continue
        todo.append(index)
    if not todo:
        console.print(f"{results}: every shard is complete, queued or running; nothing submitted")
    else:
        recorded = len(distributed.jobs)
        job = scheduler.submit(distributed, todo)
        # A scheduler that recorded no job (a dry run) says what it did instead.
        said = f"submitted {scheduler.name} job {job}" if len(distributed.jobs) > recorded else job
        console.print(f"{said}: shard(s) {', '.join(map(str, todo))} of {shards}", highlight=False)
    console.print(
        f"Next: oltplab status {results}; when done, oltplab merge {results} -o MERGED "
        f"(or oltplab report {results}/shard-*); oltplab cancel {results} stops it",
        highlight=False,
    )


def _parameter(option: SubmitOption) -> inspect.Parameter:
    """A scheduler's option as Typer takes it; a tuple is an option given once per value."""
    kind, default = option.kind, option.default
    if typing.get_origin(kind) is tuple:
        kind, default = list[typing.get_args(kind)[0]] | None, None  # type: ignore[misc]
    made = flag if kind is bool else typer.Option
    annotation = Annotated[kind, made(option.flag, help=option.help)]  # type: ignore[valid-type]
    return inspect.Parameter(
        option.field, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
    )


def _scheduler_command(name: str) -> Any:
    options = submit_options(name)
    if clash := [o.field for o in options if o.field in _COMMON]:
        raise OltplabError(f"scheduler {name!r}: option {clash[0]} is one submit has already")
    tuples = {o.field for o in options if typing.get_origin(o.kind) is tuple}

    def submit(spec_path: Path, shards: int, results: Path, **given: Any) -> None:
        # A repeated option not given at all leaves the class's default.
        values = {
            k: tuple(v) if k in tuples else v for k, v in given.items() if v or k not in tuples
        }
        _submit(spec_path, results, shards, scheduler_named(name, **values))

    common = [
        inspect.Parameter(field, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation)
        for field, annotation in zip(
            _COMMON, (SpecArgument, ShardsOption, ResultsOption), strict=True
        )
    ]
    parameters = [*common, *map(_parameter, options)]
    submit.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    submit.__annotations__ = {p.name: p.annotation for p in parameters}
    one = typer.Typer(add_completion=False)
    about = described(name).rstrip(".")
    one.command(name, cls=Command, help=f"{about}; {_RESUMES}." if about else None)(submit)
    return typer.main.get_command(one)


class Submit(Group):
    """Each registered scheduler's command, then the commands added to the group itself; made
    when the command line is (after the plugins are imported), as `--help`, a mistyped
    name's suggestion and the reference all list them."""

    def __init__(self, *, commands: dict[str, Any] | None = None, **settings: Any) -> None:
        built = {name: _scheduler_command(name) for name in registered()}
        own = {name: c for name, c in (commands or {}).items() if name not in built}
        super().__init__(commands={**built, **own}, **settings)


submit_app = typer.Typer(
    help="Run the shards of a matrix through a scheduler: one machine per shard.",
    no_args_is_help=True,
    cls=Submit,
)
