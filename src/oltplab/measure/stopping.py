"""Adaptive cells: sysbench runs through measure/workloads/gate.lua with
measure_seconds as its limit, and a watch reads the per-second lines as they come. Once
the stopping rule (base/stopping.py) is met it creates the file that ends every sysbench
thread after its current event; sysbench then prints its summary as at any end, so the
raw file is a whole sysbench output, as long as the cell ran."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from oltplab.base.stopping import Stop, StopRule, first_stop, stop_point
from oltplab.spec import ProtocolSpec
from oltplab.sysbench.output import read_output


@dataclass
class Watch:
    """Called with the seconds elapsed as sysbench runs (as a progress display is)."""

    output: Path
    stop_file: Path
    rule: StopRule
    stopped: Stop | None = None
    _seen: int = field(default=0, repr=False)
    _next_look: float = field(default=0.0, repr=False)

    @classmethod
    def of_cell(
        cls, protocol: ProtocolSpec, rate: int, output: Path, scratch: Path
    ) -> Watch | None:
        """A watch for a closed-loop cell of an adaptive protocol; None otherwise. Its stop
        file lives in the run's scratch, never among the results."""
        if protocol.stop != "adaptive" or rate:
            return None
        return cls._over(output, scratch, protocol.stop_rule())

    @classmethod
    def of_warm_up(
        cls, protocol: ProtocolSpec, seconds: int, output: Path, scratch: Path
    ) -> Watch | None:
        """A warm-up of an adaptive protocol ends as a cell would: once its own series is
        steady and its level known to the target (the warm-up's seconds the most)."""
        if protocol.stop != "adaptive":
            return None
        return cls._over(output, scratch, protocol.stop_rule(seconds))

    @classmethod
    def _over(cls, output: Path, scratch: Path, rule: StopRule) -> Watch:
        # Engines name their cells alike (Tier128M_RW_4th): the output's own path tells them apart.
        stop_file = scratch / f"{hashlib.sha256(str(output).encode()).hexdigest()[:16]}.stop"
        stop_file.unlink(missing_ok=True)
        return cls(output, stop_file, rule)

    def __call__(self, elapsed: float) -> None:
        # sysbench prints a line a second: looking more often finds nothing new.
        if self.stopped is not None or elapsed < self._next_look or not self.output.is_file():
            return
        self._next_look = elapsed + 1
        tps = read_output(self.output).tps
        if len(tps) == self._seen:
            return
        self._seen = len(tps)
        found = first_stop(tps, self.rule)
        if found is not None:
            self.stopped = found
            self.stop_file.parent.mkdir(parents=True, exist_ok=True)
            self.stop_file.touch()

    def beside(self, advance: Callable[[float], None]) -> Callable[[float], None]:
        """The progress display's tick, and this watch's."""

        def both(elapsed: float) -> None:
            advance(elapsed)
            self(elapsed)

        return both

    def outcome(self) -> Stop:
        """Where it stopped, or what the rule says of the whole cell that ran to its end."""
        self.stop_file.unlink(missing_ok=True)
        if self.stopped is not None:
            return self.stopped
        return stop_point(read_output(self.output).tps, self.rule)
