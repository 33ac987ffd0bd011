"""The seam between a distributed run and the scheduler that runs its shards.

A scheduler is one module with one class implementing `Scheduler` (submit shards, say
where each stands, cancel them) and one `register` line below; `status`, `submit` again
and `cancel` then work for it as for the others. The state words stay the scheduler's
own (`RUNNING`, `Pending`, ...); `active` is what oltplab decides on: a shard whose task
is queued or running is not submitted again, and its cells are not complete until the
scheduler says it ended.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from oltplab.base.errors import OltplabError
from oltplab.distribute.layout import Distributed


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


# name -> a scheduler with its default options (status and cancel need no others)
_REGISTERED: dict[str, Callable[[], Scheduler]] = {}


def register(name: str, make: Callable[[], Scheduler]) -> None:
    _REGISTERED[name] = make


def scheduler_named(name: str) -> Scheduler:
    if name not in _REGISTERED:
        known = ", ".join(sorted(_REGISTERED))
        raise OltplabError(f"scheduler {name!r}: not one oltplab knows (known: {known})")
    return _REGISTERED[name]()


def registered() -> list[str]:
    return sorted(_REGISTERED)
