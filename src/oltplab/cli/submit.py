"""`oltplab submit`: one command per registered scheduler, built from its class when asked
for, so that a scheduler a plugin registers has its command too."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import typer

from oltplab.base.errors import OltplabError
from oltplab.cli.app import Command, Group, console
from oltplab.cli.options import given_values, made, parameters, with_parameters
from oltplab.distribute.layout import prepare, shard_state
from oltplab.distribute.schedulers import (
    ChecksResults,
    Scheduler,
    SubmitAsked,
    described,
    registered,
    scheduler_class,
    scheduler_named,
)
from oltplab.spec import load_spec

_RESUMES = "submitting again runs only the shards that are not complete and not queued or running"


def _submit(asked: SubmitAsked, scheduler: Scheduler) -> None:
    """The shards that are not complete and not queued or running, to the scheduler."""
    spec, results, shards = load_spec(asked.spec_path), asked.results, asked.shards
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


def _scheduler_command(name: str) -> Any:
    make = scheduler_class(name)
    own: list[inspect.Parameter] = parameters(make) if dataclasses.is_dataclass(make) else []
    common = parameters(SubmitAsked)
    if clash := {p.name for p in own} & {p.name for p in common}:
        raise OltplabError(f"scheduler {name!r}: option {min(clash)} is one submit has already")

    def submit(**given: Any) -> None:
        asked = made(SubmitAsked, {p.name: given.pop(p.name) for p in common})
        _submit(asked, scheduler_named(name, **given_values(make, given)))  # type: ignore[arg-type]

    with_parameters(submit, [*common, *own])
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
