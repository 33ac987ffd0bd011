"""A toy order, added as a new one is: this one class, its one `register` line at the
end, and nothing of oltplab changed. Loaded, a spec may say `order = "last-first"`: each
round's sessions are measured from the last to the first, each engine started for its
session and stopped after it.

`OLTPLAB_PLUGINS=tests.support.toys.toy_order oltplab run ...` loads it (cli/plugins.py);
tests/engine/test_toy_order.py runs it and reads the sessions' order from the run's log."""

from __future__ import annotations

from oltplab.measure.ordering import register
from oltplab.measure.run import Round, Run
from oltplab.measure.session import OpenSession


class LastFirst:
    def __init__(self, run: Run) -> None:
        self.run = run

    def measure(self, round_: Round) -> None:
        for session in reversed(round_.sessions):
            chosen = round_.cells.get(session, [])
            opened = OpenSession.open(self.run, session, chosen) if chosen else None
            if opened is not None:
                try:
                    opened.measure_cells(session, chosen)
                finally:
                    opened.close()

    def close(self) -> None:
        pass


register("last-first")(LastFirst)
