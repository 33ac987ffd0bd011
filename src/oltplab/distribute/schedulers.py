"""The seam between a distributed run and the scheduler that runs its shards.

A scheduler is one module with one class implementing `Scheduler` (submit shards, say
where each stands, cancel them) and one `register` line: in `distribute/__init__.py` for
oltplab's own, in the module itself for a plugin (`oltplab.cli.plugins`). `oltplab submit
<name>` is then built from the class (its docstring the help, each field made with
`submit_option` an option, declared as every command's are: `oltplab.base.asking`), and
`status` and `cancel` work for it as for the others.
The state words stay the scheduler's own (`RUNNING`, `Pending`, ...); `active` is what
oltplab decides on: a shard whose task is queued or running is not submitted again, and
its cells are not complete until the scheduler says it ended.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from oltplab.base.asking import argument, option, results_option, spec_argument
from oltplab.base.errors import OltplabError
from oltplab.base.telling import Told
from oltplab.distribute.layout import Distributed, is_distributed, read_distributed


@dataclass(frozen=True)
class TaskState:
    said: str  # the scheduler's own word for it
    node: str  # where it runs or ran; "-" when not known
    active: bool  # queued or running


class Scheduler(Protocol):
    @property
    def name(self) -> str:
        """As distribute.json records it, and as `register` knows it."""
        ...

    def submit(self, distributed: Distributed, shards: list[int]) -> str:
        """Start these shards; the scheduler's id for what it started, also recorded in
        `distributed.jobs` (and saved) so that states and cancel find it later."""
        ...

    def states(self, distributed: Distributed) -> dict[int, TaskState]:
        """Each shard's latest task as the scheduler knows it; shards it no longer knows
        (or never ran) are absent."""
        ...

    def cancel(self, distributed: Distributed) -> list[int]:
        """Stop every active task of the run; the shards stopped."""
        ...


@typing.runtime_checkable
class ChecksResults(Protocol):
    """A scheduler whose tasks need something of the results directory (a pod's user that
    must write it), checked before `submit` creates or writes anything there."""

    def check_results(self, root: Path) -> None: ...


# name -> the scheduler's class, which makes it with its default options when called bare
# (status and cancel need no others) and with the options `submit` was given.
_REGISTERED: dict[str, Callable[..., Scheduler]] = {}


def register(name: str, make: Callable[..., Scheduler]) -> None:
    _REGISTERED[name] = make


def scheduler_named(name: str, **options: Any) -> Scheduler:
    if name not in _REGISTERED:
        known = ", ".join(sorted(_REGISTERED))
        raise OltplabError(f"scheduler {name!r}: not one oltplab knows (known: {known})")
    return _REGISTERED[name](**options)


def registered() -> list[str]:
    return sorted(_REGISTERED)


# More shards than this is no machine count anyone has; past it, dealing blocks alone
# would take gigabytes before saying so.
MAX_SHARDS = 10_000


def shards_option(default: Any = dataclasses.MISSING) -> Any:
    """`--shards N`, as plan and every scheduler's submit take it."""
    return option(default, "How many shards.", "--shards", "-n", min=1, max=MAX_SHARDS)


@dataclass(frozen=True, kw_only=True)
class SubmitAsked:
    """What every scheduler's `submit` takes before its own options."""

    spec_path: Path = spec_argument()
    shards: int = shards_option()
    results: Path = results_option("The run's directory, on a filesystem every node sees.")


def submit_option(help: str, *, default: Any = None, flag: str | None = None) -> Any:
    """A field of a scheduler's class that `oltplab submit` takes as an option (--field-name
    unless `flag` names it otherwise). It has a default: `status` and `cancel` make the
    scheduler with none given."""
    return option(default, help, *([flag] if flag else []))


def scheduler_class(name: str) -> Callable[..., Scheduler]:
    """What makes the scheduler: its class, whose declared fields are its options."""
    return _REGISTERED[name]


def described(name: str) -> str:
    """What `oltplab submit <name>` does: the first paragraph of its class's docstring."""
    return " ".join((inspect.getdoc(_REGISTERED[name]) or "").split("\n\n")[0].split())


@dataclass(frozen=True, kw_only=True)
class CancelAsked:
    results: Path = argument("A distributed run's directory (oltplab submit wrote it).", "RESULTS")


def cancelled(asked: CancelAsked) -> Told:
    """Every queued or running shard of the run cancelled, named; how to resume."""
    stopped = cancel_run(asked.results)
    said = ", ".join(map(str, stopped)) if stopped else "none was queued or running"
    return Told(
        (f"cancelled shard(s): {said}",),
        f"oltplab status {asked.results}; the same oltplab submit command resumes the run",
    )


def cancel_run(results: Path) -> list[int]:
    """The shards of a distributed run that its scheduler cancelled, queued or running."""
    if not is_distributed(results):
        raise OltplabError(
            f"{results}: not a distributed run (no distribute.json); oltplab submit writes one"
        )
    distributed = read_distributed(results.resolve())
    return scheduler_named(distributed.scheduler).cancel(distributed)
