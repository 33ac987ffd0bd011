"""A thread that samples once a second on the sysbench clock (sample k at its start plus k
seconds, so it describes second k of the run), at a lower priority than the engine and
sysbench, until stopped. The engine probe and the load sampler are two."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from oltplab.base.nesting import load_json

NICENESS = 10


class EverySecond(threading.Thread):
    def __init__(self, name: str, output: Path, reference: float) -> None:
        super().__init__(name=name, daemon=True)
        self.output = output
        self.reference = reference
        self._stopping = threading.Event()
        self.error: str | None = None

    def stop(self) -> None:
        self._stopping.set()
        self.join(timeout=15)

    def seconds(self) -> Iterator[float]:
        """Yields at each whole second of the run, the seconds since its start, until
        stopped; the thread's samples yield the CPU to the engine and sysbench."""
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICENESS)
        tick = 0
        while not self._stopping.is_set():
            yield round(time.time() - self.reference, 3)
            tick += 1
            self._stopping.wait(max(0.0, self.reference + tick - time.time()))


def read_lines(path: Path) -> list[dict[str, Any]]:
    """A sampler's raw file, one JSON object a line, up to a line it was stopped in the
    middle of; [] when the file cannot be read."""
    samples = []
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            samples.append(load_json(line))
        except ValueError:
            break
    return samples
