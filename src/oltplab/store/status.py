"""The states a cell and a run pass through, as the ledger stores them (the values are the
words in its status columns; a StrEnum compares equal to them)."""

from enum import StrEnum


class Status(StrEnum):
    """A cell's: registered, being measured, measured, or failed with a reason."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class RunStatus(StrEnum):
    """A run's: under way (or killed: its process no longer holds the lock), or ended."""

    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    DISK_FULL = "stopped: disk full"
