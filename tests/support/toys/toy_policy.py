"""A toy round policy, added as a new one is: this one class, its one `register` line at
the end, and nothing of oltplab changed. Loaded, every run measures its plan's rounds
three times over, a batch (as many rounds as the plan has) at a time.

`OLTPLAB_PLUGINS=tests.support.toys.toy_policy oltplab run ...` loads it (cli/plugins.py);
tests/engine/test_toy_policy.py runs it on engines kept running, and checks they start once
for all three batches."""

from __future__ import annotations

from dataclasses import replace

from oltplab.measure.request import RunRequest
from oltplab.measure.rounds import first_rounds, register
from oltplab.measure.run import Round, Run
from oltplab.plan import Session, again, cells_of

BATCHES = 3


class ThreeBatches:
    def __init__(self, request: RunRequest, sessions: list[Session]) -> None:
        self.template = first_rounds(sessions)
        self.batch = request.spec.protocol.repetitions
        self.added = 0

    def next_round(self, run: Run) -> Round | None:
        if self.added == BATCHES - 1:
            return None
        self.added += 1
        first = self.batch * self.added + 1
        cells = {
            replace(cell, repetition=repetition)
            for session in self.template
            for cell in session.cells
            for repetition in range(first, first + self.batch)
        }
        round_ = Round.whole(again(self.template, cells))
        run.add_cells(cells_of(round_.sessions))
        run.expect(round_)
        return round_


register(ThreeBatches)
