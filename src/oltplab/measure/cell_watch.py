"""Adaptive cells: sysbench runs through measure/gates/gate.lua with
measure_seconds as its limit, and a watch reads the per-second lines as they come, with
what the engine probe has sampled of the engine's state. Once the stopping rule
(base/stopping_rule.py) is met, not before the horizon the cell's block has shown, it creates
the file that ends every sysbench thread after its current event; sysbench then prints its
summary as at any end, so the raw file is a whole sysbench output, as long as the cell ran."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from oltplab.base.stationarity import Capacities, StateSignal, state_signals
from oltplab.base.stopping_rule import (
    Horizon,
    Stop,
    StopRule,
    block_horizon,
    first_stop,
    stop_point,
)
from oltplab.plan import Cell
from oltplab.spec import ProtocolSpec
from oltplab.store.ledger import Ledger
from oltplab.store.status import Status
from oltplab.sysbench.reading import read_output
from oltplab.telemetry.engine import probe_telemetry


def ran_before(ledger: Ledger, cell: Cell) -> list[np.ndarray]:
    """The per-second series of the cell's block measured so far, in the order they ran."""
    series = ledger.tps_series()
    done = [
        row
        for row in ledger.cells()
        if row.cell.group == cell.group and row.status == Status.DONE and row.key in series
    ]
    done.sort(key=lambda row: (row.started_at or "~", row.repetition))
    return [series[row.key] for row in done]


@dataclass(frozen=True)
class EngineSignals:
    """The engine-state signals of a running cell, read from its probe's raw file."""

    probe: Path | None  # None: no engine probe runs (telemetry off): no signals
    capacities: Capacities

    def signals(self, seconds: int) -> list[StateSignal]:
        if self.probe is None:
            return []
        return state_signals(probe_telemetry(self.probe), seconds, self.capacities)


@dataclass
class Watch:
    """Called with the seconds elapsed as sysbench runs (as a progress display is)."""

    output: Path
    stop_file: Path
    rule: StopRule
    horizon: Horizon | None = None  # a cell's always has one; a warm-up's none
    state: EngineSignals = EngineSignals(None, Capacities())
    stopped: Stop | None = None
    _checked: int = field(default=0, repr=False)
    _next_look: float = field(default=0.0, repr=False)

    @classmethod
    def of_cell(
        cls,
        protocol: ProtocolSpec,
        cell: Cell,
        output: Path,
        scratch: Path,
        ledger: Ledger,
        probe: Path | None,
    ) -> Watch | None:
        """A watch for a closed-loop cell of an adaptive protocol; None otherwise. Its stop
        file lives in the run's scratch, never among the results."""
        if protocol.stop != "adaptive" or cell.rate:
            return None
        rule = protocol.stop_rule()
        variables = ledger.variables().get((cell.engine, cell.tier, cell.workload), {})
        earlier = ran_before(ledger, cell)
        return replace(
            cls._over(output, scratch, rule),
            horizon=block_horizon(earlier, rule.max_seconds, rule),
            state=EngineSignals(probe, Capacities.of(variables)),
        )

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
        # The rule looks at checks only: a second between two of them changes nothing.
        if len(tps) // self.rule.check_seconds == self._checked:
            return
        self._checked = len(tps) // self.rule.check_seconds
        found = first_stop(tps, self.rule, self.horizon, self.state.signals(len(tps)))
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
        tps = read_output(self.output).tps
        return stop_point(tps, self.rule, self.horizon, self.state.signals(len(tps)))
